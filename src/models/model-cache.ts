/** The loaded models of one process (a split worker, `models add`), each loaded once. */
import type { SeparationModel } from '../separation/model.js';
import type { ModelLoader, ModelRef } from './refs.js';

/** Loads models once and keeps them: loading converts and allocates, splitting reuses. */
export class ModelCache {
  readonly #load: ModelLoader;
  readonly #loaded = new Map<string, Promise<SeparationModel>>();

  constructor(load: ModelLoader) {
    this.#load = load;
  }

  load(ref: ModelRef): Promise<SeparationModel> {
    const key = `${ref.kind}:${ref.path}:${ref.configPath ?? ''}:${JSON.stringify(ref.options ?? {})}`;
    let model = this.#loaded.get(key);
    if (!model) {
      model = this.#load(ref);
      model.catch(() => this.#loaded.delete(key));
      this.#loaded.set(key, model);
    }
    return model;
  }

  async disposeAll(): Promise<void> {
    const models = [...this.#loaded.values()];
    this.#loaded.clear();
    await Promise.all(models.map(async (m) => (await m.catch(() => undefined))?.dispose()));
  }
}
