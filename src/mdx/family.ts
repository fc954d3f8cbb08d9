/**
 * The MDX-Net family's record (contract/family.ts): UVR's `.onnx` models with their model data
 * (UVR's table by hash, or `NAME.json` beside the file), run as python-audio-separator's MDX
 * separator runs them, with its flags.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { ModelFamilyRecord } from '../contract/family.js';
import { readOptionTable } from '../contract/option-table.js';
import { conversionsOf } from '../onnx/cache.js';
import { installUvrModelData, uvrDataFileFor } from '../uvr/pull.js';
import { MDX_CATALOG, MDX_MODEL_DATA_SOURCE, type MdxCatalogModel } from './catalog.js';
import { MDX_OPTION_TABLE, type MdxOptions } from './options.js';

export const mdxFamily: ModelFamilyRecord<MdxCatalogModel> = {
  id: 'mdx',
  takers: 'MDX-Net .onnx models',
  files: 'an MDX-Net .onnx',
  claim: (file) => (path.extname(file).toLowerCase() === '.onnx' ? { path: file, description: `MDX-Net model ${file}` } : undefined),
  listedName: () => 'mdx',
  companions(model) {
    const data = path.join(path.dirname(model.path), uvrDataFileFor(model.path));
    return existsSync(data) ? [data] : [];
  },
  optionTable: MDX_OPTION_TABLE,
  catalog: MDX_CATALOG,
  options(values) {
    const mdx = readOptionTable(MDX_OPTION_TABLE, values);
    return mdx === undefined ? undefined : { mdx };
  },
  async load(model, options) {
    const { loadMdx } = await import('./engine.js');
    const mdx = model.options?.['mdx'] as Partial<MdxOptions> | undefined;
    return loadMdx(
      { name: model.name, path: model.path, ...(mdx ? { options: { mdx } } : {}) },
      { intraOpThreads: options.intraOpThreads, cacheDir: options.cacheDir },
    );
  },
  pull: {
    dir: (cacheDir) => path.join(cacheDir, 'mdx'),
    entry: (model, dir) => (model.files.every((file) => existsSync(path.join(dir, file))) ? path.join(dir, model.files[0] as string) : undefined),
    async install(model, dir, fresh) {
      const onnx = path.join(dir, model.files[0] as string);
      await installUvrModelData(onnx, { data: model.mdxModelData, hash: model.uvrHash }, fresh);
      return onnx;
    },
    notes: (model) =>
      model.mdxModelData === undefined
        ? []
        : [
            `${uvrDataFileFor(model.files[0] as string)}: UVR's model data for this file (UVR hash ${model.uvrHash ?? 'not checked'}, from ${MDX_MODEL_DATA_SOURCE})`,
          ],
    extraFiles: (model) => (model.mdxModelData === undefined ? [] : [uvrDataFileFor(model.files[0] as string)]),
    conversions: (model, dir, cacheDir) => conversionsOf(cacheDir, path.join(dir, model.files[0] as string), ['mdx']),
  },
};
