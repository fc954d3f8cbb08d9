/**
 * The real model loaders, imported lazily: onnxruntime is heavy, so only commands that split
 * (serve, split, eval) pay for loading it. An MSST checkpoint's family is told from its yaml
 * (or `--model-type`) here, so no family imports another.
 */
import { StemsplitError } from '../errors.js';
import { msstModelType, readMsstDocument, type MsstModelType } from '../msst/config.js';
import type { SeparationModel } from '../separation/model.js';
import type { Precision } from '../onnx/quantize.js';
import type { ModelLoaders, ModelRef } from './registry.js';

interface LoaderOptions {
  readonly cacheDir: string;
  readonly intraOpThreads: number;
  /**
   * What a checkpoint is converted to (each precision is its own cache entry). Every converting
   * family takes it (a new one: pass it to its Ops, as Demucs and RoFormer do); a bundled model's
   * graph has its learned convolutions rewritten to int8 when it loads (onnx/quantize-graph.ts);
   * MDX-Net `.onnx` models are run as shipped, in fp32.
   */
  readonly precision?: Precision;
}

export function onnxLoaders(options: LoaderOptions): ModelLoaders {
  return {
    async onnx(ref) {
      const { loadManifestModel } = await import('../separation/index.js');
      return loadManifestModel(ref.path, { intraOpThreads: options.intraOpThreads, ...precisionOf(options) });
    },
    async demucs(ref) {
      const { loadDemucs } = await import('../demucs/index.js');
      return loadDemucs(ref.path, { cacheDir: options.cacheDir, intraOpThreads: options.intraOpThreads, ...precisionOf(options) });
    },
    msst: (ref) => loadMsst(ref, options),
    async mdx(ref) {
      const { loadMdx } = await import('../mdx/engine.js');
      return loadMdx(ref, { intraOpThreads: options.intraOpThreads });
    },
  };
}

async function loadMsst(ref: ModelRef, options: LoaderOptions): Promise<SeparationModel> {
  const configPath = ref.configPath;
  if (configPath === undefined) throw new StemsplitError('MODEL_NOT_FOUND', `no config for ${ref.path}; name one with --model-config`);
  const type = msstModelType(readMsstDocument(configPath), ref.options?.modelType);
  const common = { cacheDir: options.cacheDir, intraOpThreads: options.intraOpThreads, name: ref.name, configPath, ...precisionOf(options) };
  return MSST_FAMILIES[type](ref.path, common, type);
}

function precisionOf(options: LoaderOptions): { precision?: Precision } {
  return options.precision === undefined ? {} : { precision: options.precision };
}

type MsstLoader = (checkpoint: string, options: LoaderOptions & { readonly name: string; readonly configPath: string }, type: MsstModelType) => Promise<SeparationModel>;

const loadRoformerFamily: MsstLoader = async (checkpoint, options, type) => {
  const { loadRoformer } = await import('../roformer/engine.js');
  return loadRoformer(checkpoint, { ...options, type: type as 'bs_roformer' | 'mel_band_roformer' });
};

const MSST_FAMILIES: Readonly<Record<MsstModelType, MsstLoader>> = {
  bs_roformer: loadRoformerFamily,
  mel_band_roformer: loadRoformerFamily,
  scnet: async (checkpoint, options) => {
    const { loadScnet } = await import('../scnet/engine.js');
    return loadScnet(checkpoint, options);
  },
  mdx23c: async (checkpoint, options) => {
    const { loadMdx23c } = await import('../mdx23c/engine.js');
    return loadMdx23c(checkpoint, options);
  },
};
