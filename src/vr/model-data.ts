/**
 * A VR model's data with UVR's keys (`vr_model_param`, `primary_stem`, and for VR 5.1 `nout`,
 * `nout_lstm`; `is_karaoke`, `is_bv_model`, `is_bv_model_rebalanced` are read and unused by the
 * VR path, as in python-audio-separator): `NAME.json` beside `NAME.pth`, else UVR's table by the
 * file's hash (MD5 of its last 10,240,000 bytes, the whole file when smaller).
 */
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { StemsplitError } from '../errors.js';
import { readSmallModelFile, refuseLinkOutOfFolder } from '../model-files/regular.js';
import { MAX_MODEL_DATA_BYTES, readUvrModelDataJson, UVR_STEM_NAME, uvrModelHash } from '../uvr/model-data.js';
import { VR_PARAM_NAMES } from './params.js';

export interface VrModelData {
  readonly vrModelParam: string;
  readonly primaryStem: string;
  /** VR 5.1's widths, when the model data gives both. */
  readonly nout?: number;
  readonly noutLstm?: number;
  readonly isKaraoke: boolean;
  readonly isBvModel: boolean;
  /** Where it came from: the json beside, or the built-in table (with the model's name). */
  readonly origin: string;
}

type Entry = readonly [name: string | null, param: string, primary: string, lstm?: readonly [nout: number, noutLstm: number], flags?: 'karaoke' | 'bv'];

/**
 * UVR's VR model data, all 30 entries of TRvlvr/application_data vr_model_data/model_data_new.json
 * (commit 3826b05b), keyed by hash, and python-audio-separator's two additions (its
 * model-data.json). FoxJoy's task models carry the stem names UVR gives them now (No Echo, No
 * Reverb, Noise), where older copies of the table said No Other and Other. Names come from public
 * lists that tie a hash to its file; null where none does.
 */
const UVR_VR_MODELS: Readonly<Record<string, Entry>> = {
  '0d0e6d143046b0eecc41a22e60224582': [null, '3band_44100_mid', 'Instrumental'],
  '18b52f873021a0af556fb4ecd552bb8e': [null, '2band_32000', 'Instrumental'],
  '1fc66027c82b499c7d8f55f79e64cadc': [null, '2band_32000', 'Instrumental'],
  '2aa34fbc01f8e6d2bf509726481e7142': [null, '4band_44100', 'No Piano'],
  '3e18f639b11abea7361db1a4a91c2559': [null, '4band_44100', 'Instrumental'],
  '570b5f50054609a17741369a35007ddd': [null, '4band_v3', 'Instrumental'],
  '5a6e24c1b530f2dab045a522ef89b751': [null, '1band_sr44100_hl512', 'Instrumental'],
  '6b5916069a49be3fe29d4397ecfd73fa': ['6_HP-Karaoke-UVR', '3band_44100_msb2', 'Instrumental', undefined, 'karaoke'],
  '74b3bc5fa2b69f29baf7839b858bc679': [null, '4band_44100', 'Instrumental'],
  '827213b316df36b52a1f3d04fec89369': [null, '4band_44100', 'Instrumental'],
  '911d4048eee7223eca4ee0efb7d29256': [null, '4band_44100', 'Vocals'],
  '941f3f7f0b0341f12087aacdfef644b1': [null, '4band_v2', 'Instrumental'],
  a02827cf69d75781a35c0e8a327f3195: [null, '1band_sr33075_hl384', 'Instrumental'],
  b165fbff113c959dba5303b74c6484bc: [null, '3band_44100', 'Instrumental'],
  b5f988cd3e891dca7253bf5f0f3427c7: [null, '4band_44100', 'Instrumental'],
  b99c35723bc35cb11ed14a4780006a80: [null, '1band_sr44100_hl1024', 'Instrumental'],
  ba02fd25b71d620eebbdb49e18e4c336: [null, '3band_44100_mid', 'Instrumental'],
  c4476ef424d8cba65f38d8d04e8514e2: [null, '3band_44100_msb2', 'Instrumental'],
  da2d37b8be2972e550a409bae08335aa: [null, '4band_44100', 'Vocals'],
  db57205d3133e39df8e050b435a78c80: [null, '4band_44100', 'Instrumental'],
  ea83b08e32ec2303456fe50659035f69: [null, '4band_v3', 'Instrumental'],
  f6ea8473ff86017b5ebd586ccacf156b: ['5_HP-Karaoke-UVR', '4band_v2_sn', 'Instrumental', undefined, 'karaoke'],
  fd297a61eafc9d829033f8b987c39a3d: [null, '1band_sr32000_hl512', 'Instrumental'],
  '0ec76fd9e65f81d8b4fbd13af4826ed8': ['17_HP-Wind_Inst-UVR', '4band_v3', 'No Woodwinds'],
  '0fb9249ffe4ffc38d7b16243f394c0ff': ['UVR-DeEcho-DeReverb', '4band_v3', 'No Reverb'],
  '6857b2972e1754913aad0c9a1678c753': ['UVR-De-Echo-Aggressive', '4band_v3', 'No Echo', [48, 128]],
  f200a145434efc7dcf0cd093f517ed52: ['UVR-De-Echo-Normal', '4band_v3', 'No Echo', [48, 128]],
  '44c55d8b5d2e3edea98c2b2bf93071c7': ['UVR-DeNoise', '4band_v3', 'Noise', [48, 128]],
  '51ea8c43a6928ed3c10ef5cb2707d57b': ['UVR-DeNoise-Lite', '1band_sr44100_hl1024', 'Noise', [16, 128]],
  '944950a9c5963a5eb70b445d67b7068a': ['UVR-BVE-4B_SN-44100-1', '4band_v3_sn', 'Vocals', [64, 128], 'bv'],
  '97dc361a7a88b2c4542f68364b32c7f6': ['UVR-De-Reverb-aufr33-jarredou', '4band_v4_ms_fullband', 'Dry', [32, 128]],
  '581f4461b8d8c7e43af546eebd3b6a2a': ['UVR-BVE-4B_SN-44100-2', '4band_v4_ms_fullband', 'Vocals', [64, 128], 'bv'],
};

/** `NAME.json` beside `NAME.pth`. */
export function vrModelDataBeside(pthPath: string): string {
  return pthPath.replace(/\.pth$/i, '') + '.json';
}

/** The built-in entry for `hash`, if UVR's table knows it. */
export function builtInVrModelData(hash: string): VrModelData | undefined {
  const entry = UVR_VR_MODELS[hash];
  if (entry === undefined) return undefined;
  const [name, param, primary, lstm, flag] = entry;
  return {
    vrModelParam: param,
    primaryStem: primary,
    ...(lstm === undefined ? {} : { nout: lstm[0], noutLstm: lstm[1] }),
    isKaraoke: flag === 'karaoke',
    isBvModel: flag === 'bv',
    origin: `the built-in UVR model data (${name ?? `hash ${hash}`})`,
  };
}

/** The file name public lists give the model of a UVR key, where they give one. */
export function uvrVrModelName(hash: string): string | undefined {
  return UVR_VR_MODELS[hash]?.[0] ?? undefined;
}

/** Whether a json file holds VR model data (the key that only VR model data has). */
function isVrModelDataFile(file: string): boolean {
  try {
    const value: unknown = JSON.parse(readSmallModelFile(file, 'model data file', MAX_MODEL_DATA_BYTES));
    return typeof value === 'object' && value !== null && 'vr_model_param' in value;
  } catch {
    return false;
  }
}

/**
 * Whether a `.pth` is a UVR VR model rather than an MSST checkpoint: a NAME.json with
 * `vr_model_param` beside it, or, with no yaml of its own beside it, a NAME.json (refused when it does
 * not read) or a hash UVR's table knows.
 */
export function isVrModelFile(pthPath: string): boolean {
  if (!/\.pth$/i.test(pthPath)) return false;
  refuseLinkOutOfFolder(vrModelDataBeside(pthPath), dirname(pthPath), 'model data beside the .pth');
  if (isVrModelDataFile(vrModelDataBeside(pthPath))) return true;
  const stem = pthPath.slice(0, -'.pth'.length);
  if (existsSync(`${stem}.yaml`) || existsSync(`${stem}.yml`)) return false;
  // A NAME.json and no yaml: VR model data that does not read (too big, not JSON), refused naming it, not an MSST checkpoint missing its yaml.
  if (existsSync(vrModelDataBeside(pthPath))) return true;
  try {
    return builtInVrModelData(uvrModelHash(pthPath)) !== undefined;
  } catch {
    return false;
  }
}

/** The model data of a VR `.pth`: NAME.json beside it, else the built-in table by hash, else a one-line refusal. */
export function readVrModelData(pthPath: string): VrModelData {
  const beside = vrModelDataBeside(pthPath);
  refuseLinkOutOfFolder(beside, dirname(pthPath), 'model data beside the .pth');
  if (existsSync(beside)) return parseVrModelData(beside);
  const hash = uvrModelHash(pthPath);
  const entry = builtInVrModelData(hash);
  if (entry !== undefined) return entry;
  throw new StemsplitError(
    'MODEL_INVALID',
    `${pthPath}: VR model with hash ${hash} is not in stemsplit's table of UVR models; put its model data (vr_model_param, primary_stem, and nout, nout_lstm for VR 5.1) in ${beside}`,
  );
}

/** nout and nout_lstm: UVR's models use 16 to 64 and 128; wide enough for any, bounded so no value allocates without limit. */
const MAX_WIDTH = 1024;

function parseVrModelData(file: string): VrModelData {
  return checkVrKeys(readUvrModelDataJson(file), file);
}

/** Checks UVR's VR keys in `value`. */
export function checkVrKeys(value: unknown, where: string): VrModelData {
  const fail = (message: string): never => {
    throw new StemsplitError('MODEL_INVALID', `${where}: ${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected an object with UVR model data keys');
  const data = value as Record<string, unknown>;
  const param = data['vr_model_param'];
  if (typeof param !== 'string' || !VR_PARAM_NAMES.includes(param.replace(/\.json$/i, '')))
    fail(`vr_model_param must be one of ${VR_PARAM_NAMES.join(', ')}, got ${JSON.stringify(param).slice(0, 80)}`);
  const primary = data['primary_stem'] ?? 'Vocals';
  if (typeof primary !== 'string' || !UVR_STEM_NAME.test(primary)) {
    fail(`primary_stem must be a stem name (up to 64 letters, digits, spaces and _&+()'-), got ${JSON.stringify(primary).slice(0, 80)}`);
  }
  const width = (key: string): number | undefined => {
    const v = data[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > MAX_WIDTH)
      fail(`${key} must be a whole number from 1 to ${MAX_WIDTH}, got ${JSON.stringify(v)}`);
    return v as number;
  };
  for (const key of ['is_karaoke', 'is_bv_model'])
    if (key in data && typeof data[key] !== 'boolean') fail(`${key} must be true or false, got ${JSON.stringify(data[key])}`);
  const nout = width('nout');
  const noutLstm = width('nout_lstm');
  const lstm = nout !== undefined && noutLstm !== undefined ? { nout, noutLstm } : {};
  return {
    vrModelParam: param as string,
    primaryStem: primary as string,
    ...lstm,
    isKaraoke: data['is_karaoke'] === true,
    isBvModel: data['is_bv_model'] === true,
    origin: where,
  };
}

/** CommonSeparator.NON_ACCOM_STEMS: primary stems whose aggression is applied as 1 − a. */
const NON_ACCOMPANIMENT = ['Vocals', 'Other', 'Bass', 'Drums', 'Guitar', 'Piano', 'Synthesizer', 'Strings', 'Woodwinds', 'Brass', 'Wind Inst'];

export function isNonAccompanimentStem(primary: string): boolean {
  return NON_ACCOMPANIMENT.includes(primary);
}
