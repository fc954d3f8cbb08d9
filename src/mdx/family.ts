/**
 * The MDX-Net family's record (models/family.ts): UVR's `.onnx` models with their model data
 * (UVR's table by hash, or `NAME.json` beside the file), run as python-audio-separator's MDX
 * separator runs them, with its flags.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { MDX_MODEL_DATA_SOURCE } from '../models/catalog.js';
import type { ModelFamilyRecord } from '../models/family.js';
import { conversionsOf } from '../onnx/cache.js';
import { installUvrModelData, uvrDataFileFor } from '../uvr/pull.js';
import { MDX_DEFAULTS, type MdxOptions } from './options.js';

export const mdxFamily: ModelFamilyRecord = {
  id: 'mdx',
  takers: 'MDX-Net .onnx models',
  files: 'an MDX-Net .onnx',
  claim: (file) => (path.extname(file).toLowerCase() === '.onnx' ? { path: file, description: `MDX-Net model ${file}` } : undefined),
  listedName: () => 'mdx',
  companions(model) {
    const data = path.join(path.dirname(model.path), uvrDataFileFor(model.path));
    return existsSync(data) ? [data] : [];
  },
  flags: [
    { flags: '--mdx-segment-size <frames>', description: `MDX-Net: spectrogram frames per chunk (default ${MDX_DEFAULTS.segmentSize})`, separatorSpelling: '--mdx_segment_size' },
    { flags: '--mdx-overlap <fraction>', description: `MDX-Net: overlap of consecutive chunks, 0 to 0.99 (default ${MDX_DEFAULTS.overlap})`, separatorSpelling: '--mdx_overlap' },
    {
      flags: '--mdx-batch-size <n>',
      description: `MDX-Net: taken for python-audio-separator command lines, and as there it changes nothing: each network run takes one chunk whatever n is (docs/mdx.md; default ${MDX_DEFAULTS.batchSize})`,
      separatorSpelling: '--mdx_batch_size',
    },
    { flags: '--mdx-denoise', description: 'MDX-Net: run the network on the mix and its negation and average (UVR denoise)', separatorSpelling: '--mdx_enable_denoise' },
  ],
  options(values) {
    const overlap = values['mdxOverlap'] === undefined ? undefined : Number(values['mdxOverlap']);
    if (overlap !== undefined && !(overlap >= 0 && overlap < 1)) throw new StemsplitError('USAGE', `--mdx-overlap must be from 0 to below 1, got "${String(values['mdxOverlap'])}"`);
    const segmentSize = whole('--mdx-segment-size', values['mdxSegmentSize'], 2);
    const batchSize = whole('--mdx-batch-size', values['mdxBatchSize'], 1);
    const mdx: Partial<MdxOptions> = {
      ...(segmentSize !== undefined ? { segmentSize } : {}),
      ...(overlap !== undefined ? { overlap } : {}),
      ...(batchSize !== undefined ? { batchSize } : {}),
      ...(values['mdxDenoise'] === true ? { denoise: true } : {}),
    };
    return Object.keys(mdx).length > 0 ? { mdx } : undefined;
  },
  async load(model, options) {
    const { loadMdx } = await import('./engine.js');
    const mdx = model.options?.['mdx'] as Partial<MdxOptions> | undefined;
    return loadMdx({ name: model.name, path: model.path, ...(mdx ? { options: { mdx } } : {}) }, { intraOpThreads: options.intraOpThreads, cacheDir: options.cacheDir });
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
      model.mdxModelData === undefined ? [] : [`${uvrDataFileFor(model.files[0] as string)}: UVR's model data for this file (UVR hash ${model.uvrHash ?? 'not checked'}, from ${MDX_MODEL_DATA_SOURCE})`],
    extraFiles: (model) => (model.mdxModelData === undefined ? [] : [uvrDataFileFor(model.files[0] as string)]),
    conversions: (model, dir, cacheDir) => conversionsOf(cacheDir, path.join(dir, model.files[0] as string), ['mdx']),
  },
};

/** A whole-number flag value of at least `min`, or undefined when not given. */
function whole(flag: string, value: unknown, min: number): number | undefined {
  if (value === undefined) return undefined;
  const number = Number(value);
  if (!Number.isInteger(number) || number < min) throw new StemsplitError('USAGE', `${flag} must be a whole number ≥ ${min}, got "${String(value)}"`);
  return number;
}
