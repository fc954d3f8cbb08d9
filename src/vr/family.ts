/**
 * The VR family's record (contract/family.ts): UVR's VR-architecture `.pth` state dicts with their
 * model data (`NAME.json` beside the file, or UVR's table by hash), run as python-audio-separator's
 * VR separator runs them, with its flags. It is asked before MSST, which takes any `.pth`: a `.pth`
 * is VR's when its model data says so (json beside, or a hash UVR's table knows).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ModelFamilyRecord } from '../contract/family.js';
import { readOptionTable } from '../contract/option-table.js';
import { installUvrModelData } from '../uvr/pull.js';
import { VR_CATALOG, type VrCatalogModel } from './catalog.js';
import { isVrModelFile, vrModelDataBeside } from './model-data.js';
import { VR_OPTION_TABLE, type VrOptions } from './options.js';

export const vrFamily: ModelFamilyRecord<VrCatalogModel> = {
  id: 'vr',
  takers: 'UVR VR .pth models',
  files: 'a UVR VR .pth with its model data',
  claim: (file) => (isVrModelFile(file) ? { path: file, description: `UVR VR model ${file}` } : undefined),
  listedName: () => 'vr',
  companions(model) {
    const data = vrModelDataBeside(model.path);
    return existsSync(data) ? [data] : [];
  },
  optionTable: VR_OPTION_TABLE,
  catalog: VR_CATALOG,
  options(values) {
    const vr = readOptionTable(VR_OPTION_TABLE, values);
    return vr === undefined ? undefined : { vr };
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
