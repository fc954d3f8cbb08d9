/** What the API says about models: which are installed, which the aliases use, and their terms. */
import type { ModelListing, ModelRegistry } from '../models/registry.js';

export interface ModelInfo {
  readonly name: string;
  /** demucs, bs_roformer, mel_band_roformer, scnet, mdx23c (MSST), mdx (MDX-Net) or bundled. */
  readonly family: ModelListing['family'];
  /** `bundled`: shipped inside stemsplit; `pulled`: fetched with `models pull`; `available`: can be pulled. */
  readonly origin: ModelListing['origin'];
  readonly installed: boolean;
  /** The API aliases (`4s`, `6s`) that resolve to it now. */
  readonly aliases: ModelListing['aliases'][number][];
  readonly sources: string[];
  readonly description: string;
  /** The weights' licence or terms as published, or "not stated". */
  readonly terms: string;
}

export class ModelService {
  readonly #registry: ModelRegistry;

  constructor(registry: ModelRegistry) {
    this.#registry = registry;
  }

  list(): ModelInfo[] {
    return this.#registry.listing().map((model) => ({
      name: model.name,
      family: model.family,
      origin: model.origin,
      installed: model.installed,
      aliases: [...model.aliases],
      sources: [...model.sources],
      description: model.description,
      terms: model.terms,
    }));
  }
}
