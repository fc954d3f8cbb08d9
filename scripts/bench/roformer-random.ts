/**
 * Full-size RoFormer networks with random weights and the published hyper-parameters (no
 * download): shared by the benchmark (scripts/bench/roformer.ts) and the int8 fidelity check
 * (scripts/eval/int8-fidelity.ts).
 */
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import { bandBins } from '../../src/msst/roformer/bands.js';
import type { RoformerConfig } from '../../src/msst/roformer/config.js';
import { randomTensor } from './synthetic.js';

/** The model and inference sections of the published configs (MSST configs/viperx and configs/KimberleyJensen). */
export const PRESETS: Readonly<Record<string, object>> = {
  'viperx-bs': {
    audio: { chunk_size: 352800, num_channels: 2, sample_rate: 44100 },
    model: {
      dim: 512,
      depth: 12,
      stereo: true,
      num_stems: 1,
      time_transformer_depth: 1,
      freq_transformer_depth: 1,
      linear_transformer_depth: 0,
      dim_head: 64,
      heads: 8,
      stft_n_fft: 2048,
      stft_hop_length: 441,
      stft_win_length: 2048,
      mask_estimator_depth: 2,
    },
    training: { instruments: ['vocals', 'other'], target_instrument: 'vocals' },
    inference: { batch_size: 4, num_overlap: 2 },
  },
  'kim-mel': {
    audio: { chunk_size: 352800, num_channels: 2, sample_rate: 44100 },
    model: {
      dim: 384,
      depth: 6,
      stereo: true,
      num_stems: 1,
      time_transformer_depth: 1,
      freq_transformer_depth: 1,
      num_bands: 60,
      dim_head: 64,
      heads: 8,
      sample_rate: 44100,
      stft_n_fft: 2048,
      stft_hop_length: 441,
      stft_win_length: 2048,
      mask_estimator_depth: 2,
    },
    training: { instruments: ['vocals', 'other'], target_instrument: 'vocals' },
    inference: { batch_size: 4, num_overlap: 2 },
  },
};

/** Every parameter a RoFormer of this config has, named as in its state_dict, with random values. */
export function randomState(config: RoformerConfig): Map<string, CheckpointTensor> {
  const state = new Map<string, CheckpointTensor>();
  const seed = { seed: 1234 };
  const { dim, heads, dimHead } = config;
  const inner = heads * dimHead;
  const linear = (name: string, out: number, inputs: number, bias = true) => {
    state.set(`${name}.weight`, randomTensor([out, inputs], 1 / Math.sqrt(inputs), seed));
    if (bias) state.set(`${name}.bias`, randomTensor([out], 0.05, seed));
  };
  const gamma = (name: string, size: number) => state.set(name, { shape: [size], data: new Float32Array(size).fill(1) });
  const widths = bandBins(config).map((bins) => 2 * config.channels * bins.length);
  widths.forEach((width, b) => {
    gamma(`band_split.to_features.${b}.0.gamma`, width);
    linear(`band_split.to_features.${b}.1`, dim, width);
  });
  const transformer = (prefix: string, depth: number, kind: 'rotary' | 'linear') => {
    for (let j = 0; j < depth; j++) {
      const at = `${prefix}.layers.${j}`;
      gamma(`${at}.0.norm.gamma`, dim);
      if (kind === 'linear') {
        linear(`${at}.0.to_qkv.0`, 3 * inner, dim, false);
        state.set(`${at}.0.temperature`, { shape: [heads, 1, 1], data: new Float32Array(heads).fill(1) });
        linear(`${at}.0.to_out.1`, dim, inner, false);
      } else {
        linear(`${at}.0.to_qkv`, 3 * inner, dim, false);
        linear(`${at}.0.to_gates`, heads, dim);
        linear(`${at}.0.to_out.0`, dim, inner, false);
        const freqs = Float32Array.from({ length: dimHead / 2 }, (_, i) => 1 / 10000 ** ((2 * i) / dimHead));
        state.set(`${at}.0.rotary_embed.freqs`, { shape: [dimHead / 2], data: freqs });
      }
      gamma(`${at}.1.net.0.gamma`, dim);
      linear(`${at}.1.net.1`, 4 * dim, dim);
      linear(`${at}.1.net.4`, dim, 4 * dim);
    }
    if (config.type === 'mel_band_roformer') gamma(`${prefix}.norm.gamma`, dim);
  };
  for (let i = 0; i < config.depth; i++) {
    let k = 0;
    if (config.linearDepth > 0) transformer(`layers.${i}.${k++}`, config.linearDepth, 'linear');
    transformer(`layers.${i}.${k++}`, config.timeDepth, 'rotary');
    transformer(`layers.${i}.${k++}`, config.freqDepth, 'rotary');
  }
  if (config.type === 'bs_roformer') gamma('final_norm.gamma', dim);
  const linears = config.type === 'bs_roformer' ? config.maskEstimatorDepth : config.maskEstimatorDepth + 1;
  const hidden = dim * config.mlpExpansionFactor;
  for (let s = 0; s < config.numStems; s++) {
    widths.forEach((width, b) => {
      for (let l = 0; l < linears; l++) {
        linear(`mask_estimators.${s}.to_freqs.${b}.0.${2 * l}`, l === linears - 1 ? 2 * width : hidden, l === 0 ? dim : hidden);
      }
    });
  }
  return state;
}
