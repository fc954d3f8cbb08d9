/** MSST's `--model_type` names of the families stemsplit runs (no dependencies: the CLI's declarations read it). */
export const MSST_MODEL_TYPES = ['bs_roformer', 'mel_band_roformer', 'scnet', 'mdx23c'] as const;
export type MsstModelType = (typeof MSST_MODEL_TYPES)[number];

export function isMsstModelType(value: string): value is MsstModelType {
  return (MSST_MODEL_TYPES as readonly string[]).includes(value);
}
