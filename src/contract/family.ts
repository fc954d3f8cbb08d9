/**
 * The family contract: everything stemsplit knows of one kind of model file, in one record that
 * lives in the family's folder (`src/<family>/family.ts`). The registry, loaders, `models pull`,
 * `models add`, the CLI's flags and the API read the records in `families.ts` and never name a
 * family, so adding one is a folder and a line there.
 *
 * A record imports nothing heavy: its loader imports the family's engine when a model is loaded.
 *
 * The families share the machinery below them: checkpoints read through torch/ (StateReader checks
 * each tensor by name and shape), converted graphs cached by onnx/cache.ts, tracks streamed by
 * separation/. HTDemucs keeps its own stage list because each of its stages carries two branches
 * (spectral and temporal) in and out where onnx/stages.ts's stages write one output; MDX-Net runs
 * the user's `.onnx` as shipped, so it has no weights to read or graphs to cache.
 */
import type { AllocatorProfile } from '../onnx/process-env.js';
import type { Precision } from '../onnx/quantize.js';
import type { SeparationModel } from '../separation/model.js';

/** A family's settings for one run, keyed as each family keys its own (`mdx`, `modelType`, `vr`, …); each reaches only its family's loader. */
export type FamilyOptions = Readonly<Record<string, unknown>>;

/** What a family's loader is handed: the file, its config (MSST yaml), the run's options. */
export interface FamilyModelFile {
  readonly name: string;
  readonly path: string;
  readonly configPath?: string;
  readonly options?: FamilyOptions;
}

export interface LoadOptions {
  readonly cacheDir: string;
  readonly intraOpThreads: number;
  /** What a converted checkpoint computes in (each precision is its own cache entry). */
  readonly precision?: Precision;
}

/** A file a family recognised as its own: the config it runs with, a description, and what the file itself says of it. */
export interface ClaimedFile {
  readonly path: string;
  readonly configPath?: string;
  readonly description: string;
  /** What the file alone tells of the options (e.g. an MSST checkpoint's model type). */
  readonly options?: FamilyOptions;
  /** Where the file names itself (a stemsplit model.json): its name, stems, terms and card. */
  readonly name?: string;
  readonly sources?: readonly string[];
  readonly terms?: string;
  readonly card?: string;
}

/**
 * One row of a family's options table: the one place an option is declared. The CLI's flag, the
 * API's `modelOptions` field (the flag's attribute: `--mdx-segment-size` → `mdxSegmentSize`), the
 * check of its value, its help and python-audio-separator's spelling are all read from it
 * (contract/option-table.ts). Several families may declare the same flag (`--shifts`, `--tta`): each
 * reads it for its own models.
 */
export interface FamilyOption {
  /** As commander declares it: `--mdx-segment-size <frames>`, or a switch: `--mdx-denoise`. */
  readonly flags: string;
  /** The key the family's loader reads it under (`segmentSize`). */
  readonly key: string;
  /** `integer`, `number`, `switch` (true when given) or `choice` (one of `choices`). */
  readonly type: 'integer' | 'number' | 'switch' | 'choice';
  /** Smallest value taken (inclusive); `above`: the value must exceed it. */
  readonly min?: number;
  readonly above?: number;
  /** Largest value taken (inclusive); `below`: the value must stay under it. */
  readonly max?: number;
  readonly below?: number;
  readonly choices?: readonly string[];
  /** python-audio-separator's spelling of the same flag, where it has one (`--mdx_segment_size`). */
  readonly separatorSpelling?: string;
  /** One line for `split --help`; the range is added from the fields above. */
  readonly help: string;
}

/**
 * A catalog entry: a model `models pull` knows how to fetch, with where each file and its hash come
 * from and its terms as the publisher states them. Each family keeps its rows in its own folder
 * (`src/<family>/catalog.ts`, listed by its record's `catalog`) and may add fields only it reads
 * (a Demucs bag's weights, UVR's model data); models/catalog.ts joins them.
 */
export interface CatalogDownload {
  readonly file: string;
  readonly url: string;
  /** The SHA-256 the file must have; absent where nobody publishes one (the first pull records it). */
  readonly sha256?: string;
  /** Where the hash comes from, said at pull. */
  readonly hashSource: string;
}

export interface CatalogModel {
  readonly name: string;
  /** The record (contract/family.ts) that runs it, by its id. */
  readonly family: string;
  readonly description: string;
  /** The weights' licence or terms as their publisher states them, or "not stated". */
  readonly terms: string;
  readonly sources: readonly string[];
  /** Its files, the one it runs from first (more than one: a Demucs bag's members, or a checkpoint and its yaml). */
  readonly files: readonly string[];
  /** Per-file addresses and hashes; a family may fetch files without one (FamilyPull.defaultUrl). */
  readonly downloads?: readonly CatalogDownload[];
  /** What its family's loader is handed beside the file, as a claimed file's options (an MSST checkpoint's model type). */
  readonly options?: FamilyOptions;
}

/** `models pull`'s steps for a family's catalog models, beyond fetching and checking each file. */
export interface FamilyPull<Row extends CatalogModel = CatalogModel> {
  /** Where its pulled files live under the cache dir. */
  dir(cacheDir: string): string;
  /** The file a pulled model runs from (its checkpoint, or a file the install wrote), once every file is there; undefined: not fully installed. */
  entry(model: Row, dir: string): string | undefined;
  /** The config it runs with, where not beside the entry. */
  configPath?(model: Row, dir: string): string | undefined;
  /** The SHA-256 (or its published prefix) a file must have where the catalog gives no download of its own. */
  expectedSha?(file: string): string;
  /** The address of a file the catalog gives no download for (Demucs' release folder). */
  defaultUrl?(file: string, baseUrl: string | undefined): string;
  /** After the files arrived (`fresh`: some were downloaded now): write what the family adds; returns the entry. */
  install?(model: Row, dir: string, fresh: boolean): Promise<string>;
  /** Lines `models pull` prints about what the install added (where UVR's model data comes from). */
  notes?(model: Row): readonly string[];
  /** Files beyond the catalog's own that `models remove` deletes (a bag yaml, model data). */
  extraFiles?(model: Row): readonly string[];
  /** Cache entries made from its files that `models remove` deletes (converted graphs). */
  conversions?(model: Row, dir: string, cacheDir: string): Promise<readonly string[]>;
}

/**
 * `Row`: its catalog rows' type, the contract's CatalogModel with the fields only this family reads
 * (a Demucs bag's weights); its pull steps are handed its own rows.
 */
export interface ModelFamilyRecord<Row extends CatalogModel = CatalogModel> {
  /** The `kind` of its model references, and its catalog entries' `family`. */
  readonly id: string;
  /** Its models, in words for messages: `MDX-Net .onnx models`. */
  readonly takers: string;
  /** The files it runs, in words for messages: `an MDX-Net .onnx`. */
  readonly files: string;
  /**
   * The file as this family's, or undefined; records are asked in list order and the first claim
   * wins. `configPath` is the config the user named (`--model-config`): only a family with
   * `takesConfig` is handed one.
   */
  claim(path: string, configPath?: string): ClaimedFile | undefined;
  /** Whether its models run with a config file the user may name (MSST's yaml). */
  readonly takesConfig?: boolean;
  /** The family name `models list` and GET /v1/models show (an MSST checkpoint: its model type). */
  listedName(model: { readonly options?: FamilyOptions | undefined }): string;
  /** Files a model runs with beside its own and its config (UVR's `NAME.json`, a bag's members), for `models add`. */
  companions(model: { readonly path: string; readonly configPath?: string | undefined }): readonly string[];
  /** Its options table: every setting its models take (see FamilyOption). */
  readonly optionTable: readonly FamilyOption[];
  /**
   * Its options from the CLI's parsed values (commander's attributes, or the API's `modelOptions`),
   * read through its table and checked: a USAGE error names the flag. Undefined when none was given.
   */
  options(values: Readonly<Record<string, unknown>>): FamilyOptions | undefined;
  load(model: FamilyModelFile, options: LoadOptions): Promise<SeparationModel>;
  /**
   * Whether this model computes in int8 (`--precision int8`): true, or one line saying why it runs
   * in fp32 only (the measured figure that fell short: docs/benchmarks.md#int8-fidelity-and-speed-issue-40). Absent:
   * int8 is not implemented for the family. The CLI, the API and `models list` all ask `int8Refusal`.
   */
  readonly int8?: (model: FamilyModelFile) => true | string;
  /** The models `models pull` fetches for it (its folder's catalog.ts), each with `family` its id. */
  readonly catalog?: readonly Row[];
  readonly pull?: FamilyPull<Row>;
  /**
   * Reads what the model runs with, without loading it (an MSST checkpoint's yaml), for `serve` and
   * `worker`'s start check: a file that will not read is one line then rather than a failed job per
   * request. Absent: the claim read all there is to read.
   */
  check?(model: FamilyModelFile): void;
  /**
   * The allocator settings of the split worker that runs this model (onnx/process-env.ts); absent
   * or undefined: the default. Asked before the job reaches a worker, so it reads at most a few
   * bytes of the file and never throws: the worker judges the file. An ensemble whose members'
   * settings differ runs with the default.
   */
  allocator?(model: { readonly path: string }): AllocatorProfile | undefined;
}

/** commander's attribute name of a flag: `--mdx-segment-size <frames>` → `mdxSegmentSize`. */
export function flagAttribute(flags: string): string {
  const long = /--([a-z0-9-]+)/.exec(flags)?.[1] ?? '';
  return long.replace(/-([a-z0-9])/g, (_dash, letter: string) => letter.toUpperCase());
}

/** The long flag of a declaration: `--mdx-segment-size <frames>` → `--mdx-segment-size`. */
export function flagName(flags: string): string {
  return /--[a-z0-9-]+/.exec(flags)?.[0] ?? flags;
}
