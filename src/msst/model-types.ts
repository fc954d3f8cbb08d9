/** MSST's `--model_type` names of the families stemsplit runs (no dependencies: the CLI's declarations read it). */
export const MSST_MODEL_TYPES = ['bs_roformer', 'mel_band_roformer', 'scnet', 'mdx23c'] as const;
export type MsstModelType = (typeof MSST_MODEL_TYPES)[number];

/** Checkpoints as MSST's trainers save them. */
export const MSST_CHECKPOINT_EXTENSIONS = ['.ckpt', '.pth', '.pt', '.chpt'] as const;

/** `song.ckpt` → `song`: a checkpoint's path without its extension (other files keep theirs). */
export function checkpointStem(file: string): string {
  const ext = MSST_CHECKPOINT_EXTENSIONS.find((candidate) => file.toLowerCase().endsWith(candidate));
  return ext === undefined ? file : file.slice(0, -ext.length);
}

export function isMsstModelType(value: string): value is MsstModelType {
  return (MSST_MODEL_TYPES as readonly string[]).includes(value);
}
