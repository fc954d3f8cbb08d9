import type { FamilyOption } from '../contract/family.js';

/**
 * python-audio-separator's MDX separator settings (`--mdx_segment_size`, `--mdx_overlap`,
 * `--mdx_batch_size`, `--mdx_hop_length`, `--mdx_enable_denoise`), with its defaults.
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
  /** The STFT's hop in samples; a chunk is hop·(segmentSize − 1) samples. UVR's models were trained at 1024. */
  readonly hopLength: number;
  /** Run the network on the mix and on its negation and average (UVR's "denoise"). */
  readonly denoise: boolean;
  /** MSST's test-time augmentation on each chunk: channel swap and polarity inversion, undone and averaged. */
  readonly tta?: boolean;
  /** The secondary by UVR's spectral inversion of the mix and the primary × compensate, not their difference (separation/spectral-inversion.ts). */
  readonly invertSpect?: boolean;
}

export const MDX_DEFAULTS: MdxOptions = Object.freeze({ segmentSize: 256, overlap: 0.25, batchSize: 1, hopLength: 1024, denoise: false });

/** The MDX-Net family's options table (contract/family.ts): each row's key is an MdxOptions field. */
export const MDX_OPTION_TABLE: readonly FamilyOption[] = [
  {
    flags: '--mdx-segment-size <frames>',
    key: 'segmentSize',
    type: 'integer',
    min: 2,
    separatorSpelling: '--mdx_segment_size',
    help: `MDX-Net: spectrogram frames per chunk (default ${MDX_DEFAULTS.segmentSize})`,
  },
  {
    flags: '--mdx-overlap <fraction>',
    key: 'overlap',
    type: 'number',
    min: 0,
    below: 1,
    separatorSpelling: '--mdx_overlap',
    help: `MDX-Net: overlap of consecutive chunks (default ${MDX_DEFAULTS.overlap})`,
  },
  {
    flags: '--mdx-batch-size <n>',
    key: 'batchSize',
    type: 'integer',
    min: 1,
    separatorSpelling: '--mdx_batch_size',
    help: `MDX-Net: taken for python-audio-separator command lines, and as there it changes nothing: each network run takes one chunk whatever n is (docs/mdx.md; default ${MDX_DEFAULTS.batchSize})`,
  },
  {
    flags: '--mdx-hop-length <samples>',
    key: 'hopLength',
    type: 'integer',
    min: 1,
    separatorSpelling: '--mdx_hop_length',
    help: `MDX-Net: the STFT's hop, at most the model's n_fft; UVR's models were trained at ${MDX_DEFAULTS.hopLength}, so change it only to match python-audio-separator's command line (default ${MDX_DEFAULTS.hopLength})`,
  },
  {
    flags: '--tta',
    key: 'tta',
    type: 'switch',
    help: 'MDX-Net: also run each chunk channel-swapped and polarity-inverted, undo each, average the three (3× slower)',
  },
  {
    flags: '--invert-spect',
    key: 'invertSpect',
    type: 'switch',
    separatorSpelling: '--invert_spect',
    help: "MDX-Net: the secondary stem by UVR's spectral inversion of the mix and the primary × compensate, not their difference",
  },
  {
    flags: '--mdx-denoise',
    key: 'denoise',
    type: 'switch',
    separatorSpelling: '--mdx_enable_denoise',
    help: 'MDX-Net: run the network on the mix and its negation and average (UVR denoise)',
  },
];
