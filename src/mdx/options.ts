/**
 * python-audio-separator's MDX separator settings (`--mdx_segment_size`, `--mdx_overlap`,
 * `--mdx_batch_size`, `--mdx_enable_denoise`), with its defaults.
 */
export interface MdxOptions {
  /** Frames per segment the network sees (its dim_t is the model's; this sets the chunk). */
  readonly segmentSize: number;
  /** Fraction of a chunk shared with the next, 0 ≤ overlap < 1. */
  readonly overlap: number;
  /**
   * Checked and otherwise ignored, as audio-separator ignores it: its `split(batch_size)` cuts a
   * tensor holding one chunk, so every network run there takes one chunk (docs/mdx.md).
   */
  readonly batchSize: number;
  /** Run the network on the mix and on its negation and average (UVR's "denoise"). */
  readonly denoise: boolean;
}

export const MDX_DEFAULTS: MdxOptions = Object.freeze({ segmentSize: 256, overlap: 0.25, batchSize: 1, denoise: false });
