/**
 * Published per-stem SDR (dB) of models, as their publishers state them, keyed by model file name
 * (the name python-audio-separator downloads a model as; for a Demucs model it uses the bag's
 * `NAME.yaml`). Facts recorded as data, each set with its source; stemsplit measures none of them.
 * scripts/presets/compare.ts checks the python-audio-separator figures against a checkout of it.
 */
export interface PublishedScores {
  /** SDR in dB per stem, the stems named as the publisher names them. */
  readonly sdr: Readonly<Record<string, number>>;
  /** Who published them, on what, and where. */
  readonly source: string;
}

// Read at nomadkaraoke/python-audio-separator 0a644dbb07d94a7e747d5265e3abbaf600459449 and
// ZFTurbo/Music-Source-Separation-Training ccc011abf7f89dd7922bb2888d48493b575c0289.
export const PAS_SCORES_SOURCE =
  'python-audio-separator audio_separator/models-scores.json, median over the 13 tracks it scores (nomadkaraoke/python-audio-separator@0a644db)';
const MSST_TABLE = 'MSST docs/pretrained_models.md';
const MSST_AT = 'ZFTurbo/Music-Source-Separation-Training@ccc011a';
const MSST_MULTISONG = `${MSST_TABLE}, Multisong dataset (${MSST_AT})`;
const MSST_MUSDB = `${MSST_TABLE}, MUSDB18-HQ test (${MSST_AT})`;
const MSST_DRUMSEP = `${MSST_TABLE}, DrumSep test (${MSST_AT})`;

/** python-audio-separator's `median_scores[stem].SDR`, for the models stemsplit's catalog and presets name. */
const PAS_SDR: ReadonlyArray<readonly [string, Readonly<Record<string, number>>]> = [
  ['htdemucs.yaml', { vocals: 9.86742, drums: 9.44627, bass: 11.6443 }],
  ['htdemucs_ft.yaml', { vocals: 10.7932, drums: 10.0244, bass: 12.0199 }],
  ['htdemucs_6s.yaml', { vocals: 9.57061, drums: 8.47242, bass: 10.0979 }],
  ['hdemucs_mmi.yaml', { vocals: 10.166, drums: 9.63568, bass: 12.2277 }],
  ['model_bs_roformer_ep_317_sdr_12.9755.ckpt', { vocals: 11.7742, instrumental: 16.4511 }],
  ['model_bs_roformer_ep_368_sdr_12.9628.ckpt', { vocals: 12.1019, instrumental: 16.3069 }],
  ['mel_band_roformer_instrumental_becruily.ckpt', { vocals: 10.7513, instrumental: 15.3618 }],
  ['MDX23C-8KFFT-InstVoc_HQ.ckpt', { vocals: 10.5562, instrumental: 15.8348 }],
  ['mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt', { vocals: 8.44766, instrumental: 14.6545 }],
  ['Kim_Vocal_2.onnx', { vocals: 10.1794, instrumental: 15.3598 }],
  ['UVR-MDX-NET-Inst_HQ_4.onnx', { vocals: 8.83195, instrumental: 15.5122 }],
  ['UVR-MDX-NET-Voc_FT.onnx', { vocals: 10.1549, instrumental: 15.4338 }],
  ['UVR-MDX-NET-Inst_HQ_3.onnx', { vocals: 8.80873, instrumental: 15.421 }],
  ['5_HP-Karaoke-UVR.pth', { vocals: 5.20256, instrumental: 12.2249 }],
  ['6_HP-Karaoke-UVR.pth', { vocals: 4.64021, instrumental: 12.9745 }],
  ['UVR-MDX-NET-Inst_HQ_5.onnx', { vocals: 8.69496, instrumental: 15.2961 }],
];

/** MSST's tables ("Metrics (SDR)"), by the checkpoint file each row links. */
const MSST_SDR: ReadonlyArray<readonly [string, PublishedScores]> = [
  ['model_bs_roformer_ep_317_sdr_12.9755.ckpt', { sdr: { vocals: 10.87 }, source: MSST_MULTISONG }],
  ['MelBandRoformer.ckpt', { sdr: { vocals: 10.98 }, source: MSST_MULTISONG }],
  ['955717e8-8726e21a.th', { sdr: { bass: 11.76, drums: 10.88, vocals: 8.24, other: 5.74 }, source: MSST_MULTISONG }],
  ['5c90dfd2-34c22ccb.th', { sdr: { bass: 11.22, drums: 10.22, vocals: 8.05 }, source: MSST_MULTISONG }],
  ['75fc33f5-1941ce65.th', { sdr: { bass: 11.17, drums: 10.7, vocals: 8.22, other: 5.42 }, source: MSST_MULTISONG }],
  ['f7e0c4bc-ba3fe64a.th', { sdr: { drums: 11.13 }, source: `${MSST_MULTISONG}, the drums specialist of the bag` }],
  [
    'aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.ckpt',
    { sdr: { kick: 14.54, snare: 9.79, toms: 10.63, hh: 3.19, cymbals: 6.08 }, source: MSST_DRUMSEP },
  ],
  ['SCNet-large_starrytong_fixed.ckpt', { sdr: { bass: 9.38, drums: 11.15, vocals: 10.94, other: 7.31 }, source: MSST_MUSDB }],
  ['SCNet-large_starrytong_fixed.ckpt', { sdr: { bass: 11.27, drums: 11.23, vocals: 9.05, other: 5.57 }, source: MSST_MULTISONG }],
  ['model_scnet_ep_36_sdr_10.0891.ckpt', { sdr: { bass: 9.23, drums: 11.81, vocals: 11.42, other: 7.88 }, source: MSST_MUSDB }],
  ['model_scnet_ep_36_sdr_10.0891.ckpt', { sdr: { bass: 11.94, drums: 11.58, vocals: 9.68, other: 6.48 }, source: MSST_MULTISONG }],
  ['model_bs_roformer_ep_17_sdr_9.6568.ckpt', { sdr: { bass: 8.48, drums: 11.61, vocals: 11.08, other: 7.44 }, source: MSST_MUSDB }],
  ['model_bs_roformer_ep_17_sdr_9.6568.ckpt', { sdr: { bass: 11.08, drums: 11.29, vocals: 9.19, other: 5.96 }, source: MSST_MULTISONG }],
];

/** Every score set, python-audio-separator's first (one evaluation over many models, so the most comparable). */
const SCORES: ReadonlyArray<readonly [string, PublishedScores]> = [
  ...PAS_SDR.map(([file, sdr]) => [file, { sdr, source: PAS_SCORES_SOURCE }] as const),
  ...MSST_SDR,
];

/** The python-audio-separator figures as recorded (for scripts/presets/compare.ts). */
export function recordedPasScores(): ReadonlyMap<string, Readonly<Record<string, number>>> {
  return new Map(PAS_SDR);
}

/** The published scores of a model whose files (or python-audio-separator names) are `names`. */
export function publishedScores(names: readonly string[]): PublishedScores[] {
  return SCORES.filter(([file]) => names.includes(file)).map(([, scores]) => scores);
}

/** The stem a task is judged by, where it has one. */
const TASK_STEM: Readonly<Record<string, string>> = { vocals: 'vocals', instrumental: 'instrumental', karaoke: 'vocals' };

/**
 * The one figure `models list --sort sdr` orders by: from the first score set, the task's stem
 * (`--task vocals`: vocals), or the mean over the stems it scores; null without scores.
 */
export function headlineSdr(scores: readonly PublishedScores[], task: string): number | null {
  const first = scores[0];
  if (first === undefined) return null;
  const stem = TASK_STEM[task];
  if (stem !== undefined && first.sdr[stem] !== undefined) return first.sdr[stem];
  const values = Object.values(first.sdr);
  return values.length === 0 ? null : values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Orders rows best headline SDR first (of `task`'s stem, else each row's own task's), unscored last, in place. */
export function sortBySdr<Row extends { readonly scores: readonly PublishedScores[]; readonly task: string }>(rows: Row[], task?: string): Row[] {
  const sdr = (row: Row) => headlineSdr(row.scores, task ?? row.task) ?? -Infinity;
  return rows.sort((a, b) => sdr(b) - sdr(a));
}
