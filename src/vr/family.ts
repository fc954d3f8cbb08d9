/**
 * The VR family's record (models/family.ts): UVR's VR-architecture `.pth` state dicts with their
 * model data (`NAME.json` beside the file, or UVR's table by hash), run as python-audio-separator's
 * VR separator runs them, with its flags. It is asked before MSST, which takes any `.pth`: a `.pth`
 * is VR's when its model data says so (json beside, or a hash UVR's table knows).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { ModelFamilyRecord } from '../models/family.js';
import { installUvrModelData } from '../uvr/pull.js';
import { isVrModelFile, vrModelDataBeside } from './model-data.js';
import { VR_DEFAULTS, vrOptions, type VrOptions } from './options.js';

/** Each flag's commander attribute and the option it sets. */
const OPTION_OF: readonly (readonly [attribute: string, flag: string, option: keyof VrOptions])[] = [
  ['vrWindowSize', '--vr-window-size', 'windowSize'],
  ['vrAggression', '--vr-aggression', 'aggression'],
  ['vrBatchSize', '--vr-batch-size', 'batchSize'],
  ['vrEnableTta', '--vr-enable-tta', 'enableTta'],
  ['vrEnablePostProcess', '--vr-enable-post-process', 'enablePostProcess'],
  ['vrPostProcessThreshold', '--vr-post-process-threshold', 'postProcessThreshold'],
  ['vrHighEndProcess', '--vr-high-end-process', 'highEndProcess'],
];

export const vrFamily: ModelFamilyRecord = {
  id: 'vr',
  takers: 'UVR VR .pth models',
  files: 'a UVR VR .pth with its model data',
  claim: (file) => (isVrModelFile(file) ? { path: file, description: `UVR VR model ${file}` } : undefined),
  listedName: () => 'vr',
  companions(model) {
    const data = vrModelDataBeside(model.path);
    return existsSync(data) ? [data] : [];
  },
  flags: [
    { flags: '--vr-window-size <frames>', description: `UVR VR: spectrogram frames per network window, 320, 512 or 1024 (default ${VR_DEFAULTS.windowSize})`, separatorSpelling: '--vr_window_size' },
    { flags: '--vr-aggression <n>', description: `UVR VR: how deeply the primary stem is extracted, -100 to 100 (default ${VR_DEFAULTS.aggression})`, separatorSpelling: '--vr_aggression' },
    { flags: '--vr-batch-size <n>', description: `UVR VR: taken for python-audio-separator command lines; the stems do not depend on it (default ${VR_DEFAULTS.batchSize})`, separatorSpelling: '--vr_batch_size' },
    { flags: '--vr-enable-tta', description: 'UVR VR: test-time augmentation, a second pass shifted by half a window, averaged (slower)', separatorSpelling: '--vr_enable_tta' },
    { flags: '--vr-enable-post-process', description: "UVR VR: UVR's post-process, the mask pushed to the primary stem where it stays clean for a while", separatorSpelling: '--vr_enable_post_process' },
    { flags: '--vr-post-process-threshold <t>', description: `UVR VR: the post-process threshold, above 0 and below 1 (default ${VR_DEFAULTS.postProcessThreshold})`, separatorSpelling: '--vr_post_process_threshold' },
    { flags: '--vr-high-end-process', description: "UVR VR: mirror the input's highest frequencies into the stems", separatorSpelling: '--vr_high_end_process' },
  ],
  options(values) {
    const given: Record<string, number | boolean> = {};
    for (const [attribute, flag, option] of OPTION_OF) {
      const value = values[attribute];
      if (value === undefined || value === false) continue;
      if (value === true) {
        given[option] = true;
        continue;
      }
      const number = Number(value);
      if (!Number.isFinite(number)) throw new StemsplitError('USAGE', `${flag} must be a number, got "${String(value)}"`);
      given[option] = number;
    }
    if (Object.keys(given).length === 0) return undefined;
    const vr = given as Partial<VrOptions>;
    vrOptions(vr);
    return { vr };
  },
  async load(model, options) {
    const { loadVr } = await import('./engine.js');
    const vr = model.options?.['vr'] as Partial<VrOptions> | undefined;
    return loadVr({ name: model.name, path: model.path, ...(vr ? { options: { vr } } : {}) }, { intraOpThreads: options.intraOpThreads });
  },
  pull: {
    dir: (cacheDir) => path.join(cacheDir, 'vr'),
    entry: (model, dir) => (model.files.every((file) => existsSync(path.join(dir, file))) ? path.join(dir, model.files[0] as string) : undefined),
    // The model data is the engine's table's, under the UVR key the fresh file must have.
    async install(model, dir, fresh) {
      const pth = path.join(dir, model.files[0] as string);
      await installUvrModelData(pth, { data: undefined, hash: model.uvrHash }, fresh);
      return pth;
    },
  },
};

