/**
 * The API's two stem models, `4s` and `6s` (the v1 spec's `stemModel`): which models each tries by
 * default, which the API and the CLI use when none is named, and the flags that set them. Declared
 * once, here; config, the registry, the API schemas and the CLI read them.
 */
export const STEM_MODEL_ALIASES = ['4s', '6s'] as const;
export type StemModelAlias = (typeof STEM_MODEL_ALIASES)[number];

export function isStemModelAlias(name: string): name is StemModelAlias {
  return (STEM_MODEL_ALIASES as readonly string[]).includes(name);
}

/** What each alias tries when the operator names nothing, first installed wins: Demucs v4 once pulled, else the bundled models. */
export const DEFAULT_ALIAS_MODELS: Readonly<Record<StemModelAlias, readonly string[]>> = Object.freeze({
  '4s': Object.freeze(['htdemucs', 'stemsplit-small-4s', 'bundled-4s']),
  '6s': Object.freeze(['htdemucs_6s', 'stemsplit-small-6s', 'bundled-6s']),
});

/** The spec's default `stemModel` for a split request that names none. */
export const API_DEFAULT_ALIAS: StemModelAlias = '6s';
/** What `stemsplit split` runs without --model: the four stems most users want. */
export const CLI_DEFAULT_ALIAS: StemModelAlias = '4s';

/** The serve/worker flag that sets each alias's models. */
export const ALIAS_FLAGS: Readonly<Record<StemModelAlias, string>> = Object.freeze({ '4s': '--model-4s', '6s': '--model-6s' });

/** The catalog model worth pulling for each alias when only the small bundled model runs it. */
export const ALIAS_QUALITY_MODELS: Readonly<Record<StemModelAlias, string>> = Object.freeze({ '4s': 'htdemucs', '6s': 'htdemucs_6s' });
