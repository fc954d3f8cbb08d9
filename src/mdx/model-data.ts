/**
 * An MDX-Net `.onnx` file carries no hyper-parameters: UVR and python-audio-separator look them
 * up by the file's hash (MD5 of its last 10,240,000 bytes, the whole file when smaller) in UVR's
 * model data (`TRvlvr/application_data` mdx_model_data/model_data_new.json, plus the one entry
 * audio-separator adds in its model-data.json). stemsplit carries the MDX-Net entries of that
 * table, and reads `NAME.json` beside `NAME.onnx` (the same keys) for any other model; the file
 * beside wins, so a user can correct an entry.
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { StemsplitError } from '../errors.js';
import { refuseLinkOutOfFolder } from '../model-files/regular.js';
import { readUvrModelDataJson, UVR_STEM_NAME, uvrModelHash } from '../uvr/model-data.js';

export { HASHED_BYTES, secondaryStem, stemFileName, uvrModelHash } from '../uvr/model-data.js';

/** A model's data with UVR's keys, as in model_data_new.json. */
export interface UvrModelData {
  readonly compensate: number;
  readonly mdx_dim_f_set: number;
  /** log2 of dim_t. */
  readonly mdx_dim_t_set: number;
  readonly mdx_n_fft_scale_set: number;
  /** UVR's stem name of what the network gives ("Vocals", "Instrumental", "Reverb", …). */
  readonly primary_stem: string;
}

/** What the pipeline needs, read from UVR's keys. */
export interface MdxModelData {
  readonly compensate: number;
  readonly dimF: number;
  readonly dimT: number;
  readonly nFft: number;
  readonly primaryStem: string;
  /** Where it came from: the built-in table (with the model's name when public hash lists give one) or the json beside. */
  readonly origin: string;
}

type Entry = readonly [name: string | null, compensate: number, dimF: number, dimTLog2: number, nFft: number, primary: string];

/**
 * UVR's MDX-Net model data, keyed by hash. Names come from public hash lists (deton24's
 * separation guide, mirrored in audio-separator's docs); null where none names the hash.
 * 55657dd7… is listed there as a second "Inst_HQ_2" line; by its place it is HQ_3.
 */
const UVR_MDX_MODELS: Readonly<Record<string, Entry>> = {
  '0ddfc0eb5792638ad5dc27850236c246': ['UVR_MDXNET_9482', 1.035, 2048, 8, 6144, 'Vocals'],
  '26d308f91f3423a67dc69a6d12a8793d': ['kuielab_a_other', 1.035, 2048, 9, 8192, 'Other'],
  '2cdd429caac38f0194b133884160f2c6': ['UVR-MDX-NET-Inst_1', 1.045, 3072, 8, 7680, 'Instrumental'],
  '2f5501189a2f6db6349916fabe8c90de': ['UVR_MDXNET_KARA', 1.035, 2048, 8, 6144, 'Vocals'],
  '398580b6d5d973af3120df54cee6759d': ['UVR-MDX-NET_Main_390', 1.75, 3072, 8, 7680, 'Vocals'],
  '488b3e6f8bd3717d9d7c428476be2d75': ['UVR-MDX-NET_Inst_90_beta', 1.035, 3072, 8, 7680, 'Instrumental'],
  '4910e7827f335048bdac11fa967772f9': ['kuielab_b_drums', 1.035, 2048, 7, 4096, 'Drums'],
  '53c4baf4d12c3e6c3831bb8f5b532b93': ['UVR_MDXNET_Main', 1.043, 3072, 8, 7680, 'Vocals'],
  '5d343409ef0df48c7d78cce9f0106781': ['UVR-MDX-NET_Main_406', 1.075, 3072, 8, 7680, 'Vocals'],
  '5f6483271e1efb9bfb59e4a3e6d4d098': ['kuielab_a_vocals', 1.035, 2048, 9, 6144, 'Vocals'],
  '65ab5919372a128e4167f5e01a8fda85': ['kuielab_b_other', 1.035, 2048, 8, 8192, 'Other'],
  '6703e39f36f18aa7855ee1047765621d': ['kuielab_a_bass', 1.035, 2048, 9, 16384, 'Bass'],
  '6b31de20e84392859a3d09d43f089515': ['kuielab_b_vocals', 1.035, 2048, 8, 6144, 'Vocals'],
  '867595e9de46f6ab699008295df62798': ['UVR-MDX-NET_Main_340', 1.03, 3072, 8, 7680, 'Vocals'],
  a3cd63058945e777505c01d2507daf37: ['UVR_MDXNET_1_9703', 1.03, 2048, 8, 6144, 'Vocals'],
  b33d9b3950b6cbf5fe90a32608924700: ['UVR-MDX-NET_Main_427', 1.03, 3072, 8, 7680, 'Vocals'],
  c3b29bdce8c4fa17ec609e16220330ab: ['kuielab_b_bass', 1.035, 2048, 8, 16384, 'Bass'],
  ceed671467c1f64ebdfac8a2490d0d52: ['UVR-MDX-NET-Inst_2', 1.035, 3072, 8, 7680, 'Instrumental'],
  d2a1376f310e4f7fa37fb9b5774eb701: ['UVR-MDX-NET_Inst_187_beta', 1.035, 3072, 8, 7680, 'Instrumental'],
  d7bff498db9324db933d913388cba6be: ['UVR_MDXNET_3_9662', 1.035, 2048, 8, 6144, 'Vocals'],
  d94058f8c7f1fae4164868ae8ae66b20: ['UVR_MDXNET_2_9682', 1.035, 2048, 8, 6144, 'Vocals'],
  dc41ede5961d50f277eb846db17f5319: ['kuielab_a_drums', 1.035, 2048, 9, 4096, 'Drums'],
  e5572e58abf111f80d8241d2e44e7fa4: ['UVR-MDX-NET-Inst_3', 1.028, 3072, 8, 7680, 'Instrumental'],
  e7324c873b1f615c35c1967f912db92a: ['UVR-MDX-NET_Main_438', 1.03, 3072, 8, 7680, 'Vocals'],
  '1c56ec0224f1d559c42fd6fd2a67b154': ['UVR-MDX-NET-Inst_Main', 1.025, 2048, 8, 5120, 'Instrumental'],
  f2df6d6863d8f435436d8b561594ff49: ['UVR-MDX-NET_Inst_82_beta', 1.035, 3072, 8, 7680, 'Instrumental'],
  b06327a00d5e5fbc7d96e1781bbdb596: ['UVR-MDX-NET-Inst_full_292', 1.035, 3072, 8, 6144, 'Instrumental'],
  '94ff780b977d3ca07c7a343dab2e25dd': ['UVR-MDX-NET-Inst_full_403', 1.039, 3072, 8, 6144, 'Instrumental'],
  '73492b58195c3b52d34590d5474452f6': ['Kim_Vocal_1', 1.043, 3072, 8, 7680, 'Vocals'],
  '970b3f9492014d18fefeedfe4773cb42': ['Kim_Vocal_2', 1.009, 3072, 8, 7680, 'Vocals'],
  '1d64a6d2c30f709b8c9b4ce1366d96ee': ['UVR_MDXNET_KARA_2', 1.065, 2048, 8, 5120, 'Instrumental'],
  '203f2a3955221b64df85a41af87cf8f0': [null, 1.035, 3072, 8, 6144, 'Instrumental'],
  '291c2049608edb52648b96e27eb80e95': ['UVR-MDX-NET-Inst_HQ_1', 1.035, 3072, 8, 6144, 'Instrumental'],
  ead8d05dab12ec571d67549b3aab03fc: [null, 1.035, 3072, 8, 6144, 'Instrumental'],
  cc63408db3d80b4d85b0287d1d7c9632: ['UVR-MDX-NET-Inst_HQ_2', 1.033, 3072, 8, 6144, 'Instrumental'],
  cd5b2989ad863f116c855db1dfe24e39: ['Reverb_HQ_By_FoxJoy', 1.035, 3072, 9, 6144, 'Reverb'],
  '55657dd70583b0fedfba5f67df11d711': ['UVR-MDX-NET-Inst_HQ_3', 1.022, 3072, 8, 6144, 'Instrumental'],
  b6bccda408a436db8500083ef3491e8b: ['kim_ft_other', 1.02, 3072, 8, 7680, 'Instrumental'],
  '8a88db95c7fb5dbe6a095ff2ffb428b1': [null, 1.026, 2048, 8, 5120, 'Instrumental'],
  b78da4afc6512f98e4756f5977f5c6b9: [null, 1.021, 3072, 8, 7680, 'Instrumental'],
  '77d07b2667ddf05b9e3175941b4454a0': ['UVR-MDX-NET-Voc_FT', 1.021, 3072, 8, 7680, 'Vocals'],
  // audio-separator's own addition (model-data.json, "Added support for UVR-MDX-NET-Inst_HQ_5.onnx").
  cb790d0c913647ced70fc6b38f5bea1a: ['UVR-MDX-NET-Inst_HQ_5', 1.01, 2560, 8, 5120, 'Instrumental'],
};

/** The built-in table's entry for `hash`, in UVR's keys, with the name public lists give it. */
export function builtInModelData(hash: string): (UvrModelData & { readonly name: string | null }) | undefined {
  const entry = UVR_MDX_MODELS[hash];
  if (entry === undefined) return undefined;
  const [name, compensate, dimF, dimTLog2, nFft, primary] = entry;
  return { name, compensate, mdx_dim_f_set: dimF, mdx_dim_t_set: dimTLog2, mdx_n_fft_scale_set: nFft, primary_stem: primary };
}

/** `NAME.json` beside `NAME.onnx`. */
export function modelDataBeside(onnxPath: string): string {
  return onnxPath.replace(/\.onnx$/i, '') + '.json';
}

/** The model data of an MDX-Net file: `NAME.json` beside it, else the built-in table by hash, else a one-line refusal. */
export function readModelData(onnxPath: string): MdxModelData {
  const beside = modelDataBeside(onnxPath);
  refuseLinkOutOfFolder(beside, dirname(onnxPath), 'model data beside the .onnx');
  if (existsSync(beside)) return fromUvrKeys(parseModelDataFile(beside), beside);
  const hash = uvrModelHash(onnxPath);
  const entry = builtInModelData(hash);
  if (entry === undefined) {
    throw new StemsplitError(
      'MODEL_INVALID',
      `${onnxPath}: MDX-Net model with hash ${hash} is not in stemsplit's table of UVR models; put its model data (compensate, mdx_dim_f_set, mdx_dim_t_set, mdx_n_fft_scale_set, primary_stem) in ${beside}`,
    );
  }
  return fromUvrKeys(entry, `the built-in UVR model data (${entry.name ?? 'hash ' + hash})`);
}

function parseModelDataFile(file: string): UvrModelData {
  return checkUvrKeys(readUvrModelDataJson(file), file);
}

/**
 * The range of each UVR key: wide around every published model (compensate 1.009–1.75, dim_t
 * 2^7–2^9, n_fft 4096–16384), narrow enough that no value makes stemsplit allocate without bound.
 */
const RANGES = {
  compensate: [0.01, 10],
  mdx_dim_f_set: [4, 16_385],
  mdx_dim_t_set: [1, 12],
  mdx_n_fft_scale_set: [4, 32_768],
} as const;

/** UVR's flags that only other separators read: checked for their type, otherwise ignored. */
const BOOLEAN_KEYS = ['is_karaoke', 'is_bv_model'];

/** Checks UVR's keys in `value`, each for its type and range; UVR's flags (is_karaoke, …) stay unused, as in audio-separator's MDX separator. */
export function checkUvrKeys(value: unknown, where: string): UvrModelData {
  const fail = (message: string): never => {
    throw new StemsplitError('MODEL_INVALID', `${where}: ${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected an object with UVR model data keys');
  const data = value as Record<string, unknown>;
  if ('config_yaml' in data) fail('config_yaml names an MDX23C checkpoint, not an MDX-Net .onnx model');
  const inRange = (key: keyof typeof RANGES, whole: boolean): number => {
    const v = data[key];
    const [min, max] = RANGES[key];
    if (typeof v !== 'number' || !Number.isFinite(v) || (whole && !Number.isInteger(v)) || v < min || v > max) {
      fail(`${key} must be ${whole ? 'a whole number' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return v as number;
  };
  const primary = data['primary_stem'] ?? 'Vocals';
  if (typeof primary !== 'string' || !UVR_STEM_NAME.test(primary)) {
    fail(`primary_stem must be a stem name (up to 64 letters, digits, spaces and _&+()'-), got ${JSON.stringify(primary).slice(0, 80)}`);
  }
  for (const key of BOOLEAN_KEYS) if (key in data && typeof data[key] !== 'boolean') fail(`${key} must be true or false, got ${JSON.stringify(data[key])}`);
  return {
    compensate: inRange('compensate', false),
    mdx_dim_f_set: inRange('mdx_dim_f_set', true),
    mdx_dim_t_set: inRange('mdx_dim_t_set', true),
    mdx_n_fft_scale_set: inRange('mdx_n_fft_scale_set', true),
    primary_stem: primary as string,
  };
}

function fromUvrKeys(data: UvrModelData, origin: string): MdxModelData {
  const nFft = data.mdx_n_fft_scale_set;
  const dimF = data.mdx_dim_f_set;
  if (nFft % 2 !== 0) throw new StemsplitError('MODEL_INVALID', `${origin}: mdx_n_fft_scale_set ${nFft} must be even`);
  if (dimF > nFft / 2 + 1) throw new StemsplitError('MODEL_INVALID', `${origin}: mdx_dim_f_set ${dimF} is more than the ${nFft / 2 + 1} bins of n_fft ${nFft}`);
  return { compensate: data.compensate, dimF, dimT: 2 ** data.mdx_dim_t_set, nFft, primaryStem: data.primary_stem, origin };
}
