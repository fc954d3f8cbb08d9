/**
 * python-audio-separator's curated ensemble presets, recorded as data: names, members (by the
 * file names python-audio-separator downloads them as), algorithm and weights, as published in
 * nomadkaraoke/python-audio-separator `audio_separator/ensemble_presets.json` (version 1) at
 * commit 0a644dbb07d94a7e747d5265e3abbaf600459449 (the file last changed in adc5539, 2026-03-16).
 * Its `contributor` is the deton24 community guide for every one. scripts/presets/compare.ts
 * compares this list with a checkout of that repository.
 */
import type { PresetDefinition } from './schema.js';

export const PRESETS_SOURCE = 'nomadkaraoke/python-audio-separator audio_separator/ensemble_presets.json @ 0a644dbb07d94a7e747d5265e3abbaf600459449';

export const BUILTIN_PRESETS: Readonly<Record<string, PresetDefinition>> = {
  instrumental_clean: {
    name: 'Instrumental Clean',
    description: 'Cleanest instrumentals with minimal vocal bleed — Fv7z (bleedless 44.61) + Resurrection Inst (SDR 17.25)',
    models: ['mel_band_roformer_instrumental_fv7z_gabox.ckpt', 'bs_roformer_instrumental_resurrection_unwa.ckpt'],
    algorithm: 'uvr_max_spec',
    weights: null,
  },
  instrumental_full: {
    name: 'Instrumental Full',
    description: 'Maximum instrument preservation — v1e+ (fullness 37.89) + becruily inst (SOTA SDR 17.55)',
    models: ['melband_roformer_inst_v1e_plus.ckpt', 'mel_band_roformer_instrumental_becruily.ckpt'],
    algorithm: 'uvr_max_spec',
    weights: null,
  },
  instrumental_balanced: {
    name: 'Instrumental Balanced',
    description: 'Good balance of noise and fullness — Gabox INSTV8 + Resurrection Inst',
    models: ['mel_band_roformer_instrumental_instv8_gabox.ckpt', 'bs_roformer_instrumental_resurrection_unwa.ckpt'],
    algorithm: 'uvr_max_spec',
    weights: null,
  },
  instrumental_low_resource: {
    name: 'Instrumental Low Resource',
    description: 'Fast ensemble for low VRAM — Resurrection Inst (200MB) + MDX HQ_5 (ONNX, very fast)',
    models: ['bs_roformer_instrumental_resurrection_unwa.ckpt', 'UVR-MDX-NET-Inst_HQ_5.onnx'],
    algorithm: 'avg_fft',
    weights: null,
  },
  vocal_balanced: {
    name: 'Vocal Balanced',
    description: 'Best overall vocal quality — Resurrection (SDR 11.34) + Beta 6X (SDR 11.12) averaged',
    models: ['bs_roformer_vocals_resurrection_unwa.ckpt', 'melband_roformer_big_beta6x.ckpt'],
    algorithm: 'avg_fft',
    weights: null,
  },
  vocal_clean: {
    name: 'Vocal Clean',
    description: 'Minimal instrument bleed in vocals — Revive 2 (bleedless 40.07) + FT2 bleedless (39.30) with min FFT',
    models: ['bs_roformer_vocals_revive_v2_unwa.ckpt', 'mel_band_roformer_kim_ft2_bleedless_unwa.ckpt'],
    algorithm: 'min_fft',
    weights: null,
  },
  vocal_full: {
    name: 'Vocal Full',
    description: 'Maximum vocal capture including harmonies — Revive 3e (fullness 21.43) + becruily vocal with max FFT',
    models: ['bs_roformer_vocals_revive_v3e_unwa.ckpt', 'mel_band_roformer_vocals_becruily.ckpt'],
    algorithm: 'max_fft',
    weights: null,
  },
  vocal_rvc: {
    name: 'Vocal RVC',
    description: 'Optimized for RVC/AI voice training data — Beta 6X + Gabox voc_fv4 averaged',
    models: ['melband_roformer_big_beta6x.ckpt', 'mel_band_roformer_vocals_fv4_gabox.ckpt'],
    algorithm: 'avg_wave',
    weights: null,
  },
  karaoke: {
    name: 'Karaoke',
    description: 'Lead vocal removal — 3-model karaoke ensemble reaches SDR ~10.6 vs ~10.2 single model',
    models: ['mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt', 'mel_band_roformer_karaoke_gabox_v2.ckpt', 'mel_band_roformer_karaoke_becruily.ckpt'],
    algorithm: 'avg_wave',
    weights: null,
  },
};
