import type { BitDepth } from '../audio/formats.js';
import type { ClipMode } from '../audio/levels.js';
import type { Recipe } from '../chains/recipe.js';

/**
 * A job's choices beyond its model name, as the `jobOptions` column keeps them (JSON): how an
 * ensemble combines, two stems, the bit depth. The service writes them once, when the job is
 * made; the runner hands them to the split; GET shows them.
 */
export interface JobOptions {
  /** An ensemble's algorithm (ensemble/algorithms.ts names), for a job that named its members. */
  readonly ensemble?: string;
  readonly ensembleWeights?: readonly number[];
  /** Write this stem and `no_<stem>`. */
  readonly twoStems?: string;
  /** WAV/FLAC sample depth: 16, 24, or 32 (float, WAV only); absent, the source's. */
  readonly bitDepth?: BitDepth;
  /** A lossy format's kb/s; absent, the format's default. */
  readonly bitrateKbps?: number;
  /** audio/levels.ts: how a stem that would clip is written; absent, 'none'. */
  readonly clipMode?: ClipMode;
  /** audio/levels.ts: the peak a louder stem is scaled down to; absent, none. */
  readonly normalize?: number;
  /** The families' own settings as the job named them (`mdxSegmentSize`, …), checked when it was made. */
  readonly modelOptions?: Readonly<Record<string, string | number | boolean>>;
  /** A chain's recipe as the job asked for it (chains/recipe.ts); the job's model name is the chain's. */
  readonly chain?: Recipe;
  /** A chain keeps the stems its later steps split too. */
  readonly keepIntermediate?: boolean;
}

export function serializeJobOptions(options: JobOptions): string | null {
  return Object.keys(options).length === 0 ? null : JSON.stringify(options);
}

/** The options a row holds; a row from before they existed holds none. */
export function parseJobOptions(column: string | null): JobOptions {
  if (column === null) return {};
  const value = JSON.parse(column) as unknown;
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JobOptions) : {};
}
