/**
 * The real model loaders, imported lazily: onnxruntime is heavy, so only commands that split
 * (serve, split, eval) pay for loading it.
 */
import type { ModelLoaders } from './registry.js';

export function onnxLoaders(options: { cacheDir: string; intraOpThreads: number }): ModelLoaders {
  return {
    async onnx(manifestPath) {
      const { loadManifestModel } = await import('../separation/index.js');
      return loadManifestModel(manifestPath, { intraOpThreads: options.intraOpThreads });
    },
    async demucs(path) {
      const { loadDemucs } = await import('../demucs/index.js');
      return loadDemucs(path, { cacheDir: options.cacheDir, intraOpThreads: options.intraOpThreads });
    },
    async roformer(path, configPath, name) {
      const { loadRoformer } = await import('../roformer/engine.js');
      return loadRoformer(path, { cacheDir: options.cacheDir, intraOpThreads: options.intraOpThreads, name, ...(configPath ? { configPath } : {}) });
    },
  };
}
