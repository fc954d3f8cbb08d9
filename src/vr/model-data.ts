/**
 * A VR model's data with UVR's keys (`vr_model_param`, `primary_stem`, and for VR 5.1 `nout`,
 * `nout_lstm`; `is_karaoke`, `is_bv_model`, `is_bv_model_rebalanced` are read and unused by the
 * VR path, as in python-audio-separator): `NAME.json` beside `NAME.pth`, else UVR's table by the
 * file's hash (MD5 of its last 10,240,000 bytes, the whole file when smaller).
 */
import { existsSync, readFileSync } from 'node:fs';
import { StemsplitError } from '../errors.js';
import { uvrModelHash } from '../uvr/model-data.js';
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

type Entry = readonly [name: string, param: string, primary: string, lstm?: readonly [nout: number, noutLstm: number], flags?: 'karaoke' | 'bv'];

/**
 * UVR's VR model data (TRvlvr/application_data vr_model_data/model_data_new.json and
 * python-audio-separator's model-data.json additions), keyed by hash, with the file each hash
 * belongs to.
 */
const UVR_VR_MODELS: Readonly<Record<string, Entry>> = {
  '0d0e6d143046b0eecc41a22e60224582': ['hash 0d0e6d14…', '3band_44100_mid', 'Instrumental'],
  '6b5916069a49be3fe29d4397ecfd73fa': ['6_HP-Karaoke-UVR', '3band_44100_msb2', 'Instrumental', undefined, 'karaoke'],
  '0ec76fd9e65f81d8b4fbd13af4826ed8': ['17_HP-Wind_Inst-UVR', '4band_v3', 'No Woodwinds'],
  '0fb9249ffe4ffc38d7b16243f394c0ff': ['hash 0fb9249f…', '4band_v3', 'No Reverb'],
  '6857b2972e1754913aad0c9a1678c753': ['UVR-De-Echo-Aggressive', '4band_v3', 'No Echo', [48, 128]],
  '944950a9c5963a5eb70b445d67b7068a': ['hash 944950a9…', '4band_v3_sn', 'Vocals', [64, 128], 'bv'],
  // python-audio-separator's own additions (model-data.json).
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
    origin: `the built-in UVR model data (${name})`,
  };
}

/** Whether a json file holds VR model data (the key that only VR model data has). */
export function isVrModelDataFile(file: string): boolean {
  try {
    const value: unknown = JSON.parse(readFileSync(file, 'utf8'));
    return typeof value === 'object' && value !== null && 'vr_model_param' in value;
  } catch {
    return false;
  }
}

/** The model data of a VR `.pth`: NAME.json beside it, else the built-in table by hash, else a one-line refusal. */
export function readVrModelData(pthPath: string): VrModelData {
  const beside = vrModelDataBeside(pthPath);
  if (existsSync(beside)) return parseVrModelData(beside);
  const hash = uvrModelHash(pthPath);
  const entry = builtInVrModelData(hash);
  if (entry !== undefined) return entry;
  throw new StemsplitError(
    'MODEL_INVALID',
    `${pthPath}: VR model with hash ${hash} is not in stemsplit's table of UVR models; put its model data (vr_model_param, primary_stem, and nout, nout_lstm for VR 5.1) in ${beside}`,
  );
}

function parseVrModelData(file: string): VrModelData {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${file}: not readable JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  return checkVrKeys(value, file);
}

/** Checks UVR's VR keys in `value`. */
export function checkVrKeys(value: unknown, where: string): VrModelData {
  const fail = (message: string): never => {
    throw new StemsplitError('MODEL_INVALID', `${where}: ${message}`);
  };
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('expected an object with UVR model data keys');
  const data = value as Record<string, unknown>;
  const param = data['vr_model_param'];
  if (typeof param !== 'string' || !VR_PARAM_NAMES.includes(param.replace(/\.json$/i, ''))) fail(`vr_model_param must be one of ${VR_PARAM_NAMES.join(', ')}, got ${JSON.stringify(param)}`);
  const primary = data['primary_stem'] ?? 'Vocals';
  if (typeof primary !== 'string' || primary.trim() === '') fail(`primary_stem must be a stem name, got ${JSON.stringify(primary)}`);
  const width = (key: string): number | undefined => {
    const v = data[key];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) fail(`${key} must be a whole number ≥ 1, got ${JSON.stringify(v)}`);
    return v as number;
  };
  const nout = width('nout');
  const noutLstm = width('nout_lstm');
  const lstm = nout !== undefined && noutLstm !== undefined ? { nout, noutLstm } : {};
  return { vrModelParam: param as string, primaryStem: primary as string, ...lstm, isKaraoke: data['is_karaoke'] === true, isBvModel: data['is_bv_model'] === true, origin: where };
}

/** CommonSeparator.NON_ACCOM_STEMS: primary stems whose aggression is applied as 1 − a. */
const NON_ACCOMPANIMENT = ['Vocals', 'Other', 'Bass', 'Drums', 'Guitar', 'Piano', 'Synthesizer', 'Strings', 'Woodwinds', 'Brass', 'Wind Inst'];

export function isNonAccompanimentStem(primary: string): boolean {
  return NON_ACCOMPANIMENT.includes(primary);
}
