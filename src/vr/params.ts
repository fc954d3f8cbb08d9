/**
 * UVR's VR model parameters (python-audio-separator's uvr_lib_v5/vr_network/modelparams/*.json),
 * written down as data: what inference reads of each file. `unstable_bins`, `reduction_bins` and
 * `stable_bins` are training-only and left out; `mid_side_b` and `stereo_w` are set by two files
 * but read by no inference code, so they are kept only as the file's flags.
 */
import { StemsplitError } from '../errors.js';

/** A band's resampler as the params name it (librosa's res_type). */
export type ResType = 'polyphase' | 'sinc_fastest' | 'sinc_medium' | 'sinc_best' | 'kaiser_fast' | 'kaiser_best';

/** VR 5.1's per-band channel conversion (spec_utils.convert_channels). */
export type ConvertChannels = 'mid_side' | 'mid_side_c' | 'stereo_n';

export interface VrBand {
  readonly sr: number;
  readonly hl: number;
  readonly nFft: number;
  readonly cropStart: number;
  readonly cropStop: number;
  /** −1 where the file says so (1-band params): no high-pass. */
  readonly hpfStart: number;
  readonly hpfStop: number;
  readonly lpfStart: number;
  readonly lpfStop: number;
  readonly resType: ResType;
  readonly convertChannels?: ConvertChannels;
}

/** VR 5.0's wave-level channel handling (the param-level flags wave_to_spectrogram reads, in its order). */
export type WaveChannels = 'stereo' | 'reverse' | 'mid_side' | 'mid_side_b2';

export interface VrParams {
  readonly name: string;
  readonly bins: number;
  readonly sr: number;
  readonly preFilterStart: number;
  readonly preFilterStop: number;
  /** Band 1 (lowest) first. */
  readonly bands: readonly VrBand[];
  readonly channels: WaveChannels;
  /** Flags set in the file that no inference code reads. */
  readonly unusedFlags: readonly ('mid_side_b' | 'stereo_w')[];
}

interface Filters {
  readonly hpf?: readonly [number, number];
  readonly lpf?: readonly [number, number];
}

function band(
  sr: number,
  hl: number,
  nFft: number,
  crop: readonly [number, number],
  filters: Filters,
  resType: ResType,
  convertChannels?: ConvertChannels,
): VrBand {
  return {
    sr,
    hl,
    nFft,
    cropStart: crop[0],
    cropStop: crop[1],
    hpfStart: filters.hpf?.[0] ?? -1,
    hpfStop: filters.hpf?.[1] ?? -1,
    lpfStart: filters.lpf?.[0] ?? -1,
    lpfStop: filters.lpf?.[1] ?? -1,
    resType,
    ...(convertChannels === undefined ? {} : { convertChannels }),
  };
}

interface ParamsSpec {
  readonly bins: number;
  readonly sr: number;
  readonly preFilter: readonly [number, number];
  readonly bands: readonly VrBand[];
  readonly channels?: WaveChannels;
  readonly unusedFlags?: readonly ('mid_side_b' | 'stereo_w')[];
}

function oneBand(sr: number, hl: number, nFft: number, cropStop: number, preFilter: readonly [number, number], resType: ResType): ParamsSpec {
  return { bins: nFft / 2, sr, preFilter, bands: [band(sr, hl, nFft, [0, cropStop], {}, resType)] };
}

const FOUR_BAND_44100: readonly VrBand[] = [
  band(11025, 128, 1024, [0, 186], { lpf: [37, 73] }, 'polyphase'),
  band(11025, 128, 512, [4, 185], { hpf: [36, 18], lpf: [93, 185] }, 'polyphase'),
  band(22050, 256, 512, [46, 186], { hpf: [93, 46], lpf: [164, 186] }, 'polyphase'),
  band(44100, 512, 768, [121, 382], { hpf: [138, 123] }, 'sinc_medium'),
];

function fourBandV2(convert?: ConvertChannels): readonly VrBand[] {
  return [
    band(7350, 80, 640, [0, 85], { lpf: [25, 53] }, 'polyphase'),
    band(7350, 80, 320, [4, 87], { hpf: [25, 12], lpf: [31, 62] }, 'polyphase'),
    band(14700, 160, 512, [17, 216], { hpf: [48, 24], lpf: [139, 210] }, 'polyphase'),
    band(44100, 480, 960, [78, 383], { hpf: [130, 86] }, 'kaiser_fast', convert),
  ];
}

const THREE_BAND_44100: readonly VrBand[] = [
  band(11025, 128, 768, [0, 278], { lpf: [28, 140] }, 'polyphase'),
  band(22050, 256, 768, [14, 322], { hpf: [70, 14], lpf: [283, 314] }, 'polyphase'),
  band(44100, 512, 768, [131, 313], { hpf: [154, 141] }, 'sinc_medium'),
];

const TWO_BAND_LOW_6000 = (lpfStop: number): VrBand => band(6000, 66, 512, [0, 240], { lpf: [60, lpfStop] }, 'sinc_fastest');

const SPECS: Readonly<Record<string, ParamsSpec>> = {
  '1band_sr16000_hl512': oneBand(16000, 512, 2048, 1024, [1023, 1024], 'sinc_best'),
  '1band_sr32000_hl512': oneBand(32000, 512, 2048, 1024, [1000, 1021], 'kaiser_fast'),
  '1band_sr33075_hl384': oneBand(33075, 384, 2048, 1024, [1000, 1021], 'sinc_best'),
  '1band_sr44100_hl1024': oneBand(44100, 1024, 2048, 1024, [1023, 1024], 'sinc_best'),
  '1band_sr44100_hl256': oneBand(44100, 256, 512, 256, [256, 256], 'sinc_best'),
  '1band_sr44100_hl512': oneBand(44100, 512, 2048, 1024, [1023, 1024], 'sinc_best'),
  '1band_sr44100_hl512_cut': oneBand(44100, 512, 2048, 700, [1023, 700], 'sinc_best'),
  '1band_sr44100_hl512_nf1024': oneBand(44100, 512, 1024, 512, [511, 512], 'sinc_best'),
  '2band_32000': {
    bins: 768,
    sr: 32000,
    preFilter: [710, 731],
    bands: [TWO_BAND_LOW_6000(118), band(32000, 352, 1024, [22, 505], { hpf: [44, 23] }, 'sinc_medium')],
  },
  '2band_44100_lofi': {
    bins: 512,
    sr: 44100,
    preFilter: [510, 512],
    bands: [band(11025, 160, 768, [0, 192], { lpf: [41, 139] }, 'sinc_fastest'), band(44100, 640, 1024, [10, 320], { hpf: [47, 15] }, 'sinc_medium')],
  },
  '2band_48000': {
    bins: 768,
    sr: 48000,
    preFilter: [710, 731],
    bands: [TWO_BAND_LOW_6000(240), band(48000, 528, 1536, [22, 505], { hpf: [82, 22] }, 'sinc_medium')],
  },
  '3band_44100': { bins: 768, sr: 44100, preFilter: [757, 768], bands: THREE_BAND_44100 },
  '3band_44100_mid': { bins: 768, sr: 44100, preFilter: [757, 768], bands: THREE_BAND_44100, channels: 'mid_side' },
  '3band_44100_msb2': {
    bins: 640,
    sr: 44100,
    preFilter: [639, 640],
    channels: 'mid_side_b2',
    bands: [
      band(11025, 108, 1024, [0, 187], { lpf: [92, 186] }, 'polyphase'),
      band(22050, 216, 768, [0, 212], { hpf: [68, 34], lpf: [174, 209] }, 'polyphase'),
      band(44100, 432, 640, [66, 307], { hpf: [86, 72] }, 'kaiser_fast'),
    ],
  },
  '4band_44100': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100 },
  '4band_44100_mid': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100, channels: 'mid_side' },
  '4band_44100_msb': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100, unusedFlags: ['mid_side_b'] },
  '4band_44100_msb2': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100, unusedFlags: ['mid_side_b'] },
  '4band_44100_reverse': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100, channels: 'reverse' },
  '4band_44100_sw': { bins: 768, sr: 44100, preFilter: [740, 768], bands: FOUR_BAND_44100, unusedFlags: ['stereo_w'] },
  '4band_v2': { bins: 672, sr: 44100, preFilter: [668, 672], bands: fourBandV2() },
  '4band_v2_sn': { bins: 672, sr: 44100, preFilter: [668, 672], bands: fourBandV2('stereo_n') },
  '4band_v3': { bins: 672, sr: 44100, preFilter: [668, 672], bands: fourBandV2() },
  '4band_v3_sn': { bins: 672, sr: 44100, preFilter: [668, 672], bands: fourBandV2('stereo_n') },
  '4band_v4_ms_fullband': {
    bins: 896,
    sr: 44100,
    preFilter: [-1, -1],
    bands: [
      band(7350, 96, 768, [0, 102], { lpf: [30, 62] }, 'polyphase', 'mid_side'),
      band(7350, 96, 384, [5, 104], { hpf: [30, 14], lpf: [37, 73] }, 'polyphase', 'mid_side'),
      band(14700, 192, 640, [20, 259], { hpf: [58, 29], lpf: [191, 262] }, 'polyphase', 'mid_side'),
      band(44100, 576, 1152, [119, 575], { hpf: [157, 110] }, 'kaiser_fast', 'mid_side'),
    ],
  },
  ensemble: {
    bins: 1280,
    sr: 44100,
    preFilter: [1280, 1280],
    channels: 'mid_side_b2',
    bands: [
      band(11025, 108, 2048, [0, 374], { lpf: [92, 186] }, 'polyphase'),
      band(22050, 216, 1536, [0, 424], { hpf: [68, 34], lpf: [348, 418] }, 'polyphase'),
      band(44100, 432, 1280, [132, 614], { hpf: [172, 144] }, 'polyphase'),
    ],
  },
};

/** The names UVR's model data may give as `vr_model_param`. */
export const VR_PARAM_NAMES: readonly string[] = Object.keys(SPECS);

/** The params file `name` (UVR's `vr_model_param`, with or without `.json`). */
export function vrParams(name: string, where: string): VrParams {
  const key = name.replace(/\.json$/i, '');
  const spec = SPECS[key];
  if (spec === undefined) {
    throw new StemsplitError('MODEL_INVALID', `${where}: vr_model_param "${name}" is not one of UVR's VR model params (${VR_PARAM_NAMES.join(', ')})`);
  }
  return {
    name: key,
    bins: spec.bins,
    sr: spec.sr,
    preFilterStart: spec.preFilter[0],
    preFilterStop: spec.preFilter[1],
    bands: spec.bands,
    channels: spec.channels ?? 'stereo',
    unusedFlags: spec.unusedFlags ?? [],
  };
}
