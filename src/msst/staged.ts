/**
 * What every MSST family whose graph runs as cached ONNX stages shares: the load options, the
 * stages converted, cached and opened the same way, per-chunk timing, MSST's demix and release,
 * and the loaded network as a stemsplit model. A family adds its config, its spectrum side, its
 * graph builder (a `StagedFamily`) and `forward`.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { checkOnce } from '../onnx/cache.js';
import { convertCached, StagedSessions, writeStageFiles, type GraphStage, type StageFile } from '../onnx/stages.js';
import type { TrackModel } from '../separation/model.js';
import { checkStateDict, pickleSha256, readStateDict, type CheckpointTensor } from '../torch/checkpoint.js';
import type { MsstCommon } from './config.js';
import { demixTrack, msstModel, type ChunkNetwork, type DemixKnobs, type DemixRunOptions } from './network.js';
import { checkpointStem } from './model-types.js';

export interface MsstLoadOptions {
  readonly cacheDir: string;
  /** The MSST yaml; default the checkpoint's path with `.yaml` (or `.yml`) for its extension. */
  readonly configPath?: string;
  readonly intraOpThreads?: number;
  readonly name?: string;
  /** Overrides `inference.batch_size` (it changes which chunks fade out at the end). */
  readonly batchSize?: number;
  /** The run's overrides of `inference` and its TTA (`--mdxc-overlap`, `--mdxc-batch-size`, `--tta`). */
  readonly demix?: DemixKnobs;
  /** `--mdxc-segment-size`: STFT frames per chunk instead of the yaml's chunk_size (msst/config.ts). */
  readonly segmentSize?: number;
}

/** A conversion's cache variant for a chunk size the run chose: the graphs are built for their chunk, so another chunk is another entry. */
export function chunkVariant(config: MsstCommon): string {
  return config.chunkOverridden ? `-chunk${config.chunkSize}` : '';
}

/** Where a chunk's time goes: `stft` (the spectrum side in), `graph` (ONNX Runtime), `istft` (the spectrum side out). */
export type ChunkTimingSink = (part: 'stft' | 'graph' | 'istft', milliseconds: number) => void;

export interface StageRunOptions {
  readonly intraOpThreads?: number;
  readonly onTiming?: ChunkTimingSink;
}

/**
 * Opens a network's stages. Stages run one after another: no arena keeping each one's peak (an
 * arena that shrinks after every run measured faster for RoFormer, 18.8 s instead of 20.5 s for
 * two blocks, but peaked at 5.3 GB instead of 2.8: it grows in powers of two); no memory pattern
 * (its one block per run, planned with ONNX Runtime's buffer reuse, held more than the tensors
 * live at once and was slower to fault in: without it RoFormer, SCNet and MDX23C ran about 5 % faster
 * and peaked 8-21 % lower, docs/benchmarks.md); and no spinning threads taking the next stage's
 * cores (MDX23C measured the same wall time with spinning, for 7–13 % more CPU).
 */
function openStages(directory: string, files: readonly StageFile[], options: { readonly intraOpThreads?: number }): Promise<StagedSessions> {
  return StagedSessions.open(directory, files, {
    ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
    cpuMemArena: false,
    memPattern: false,
    allowSpinning: false,
  });
}

/** What a family gives: how its network is made from its config. */
export interface FamilyRecipe<Config extends MsstCommon, Spectrum, Network, BuildOptions> {
  /** The converted-graph cache's folder. */
  readonly name: string;
  /** Bump when the graph layout changes, so caches convert again. */
  readonly converterVersion: number;
  /** The spectrum side of a chunk; `where` names the config in errors (its path, or "the config"). */
  spectrum(config: Config, where: string): Spectrum;
  build(config: Config, state: ReadonlyMap<string, CheckpointTensor>, spectrum: Spectrum, file: string, options: BuildOptions): GraphStage[];
  network(config: Config, spectrum: Spectrum, stages: StagedSessions, onTiming: ChunkTimingSink | undefined): Network;
}

/** A family's networks from a checkpoint (converted once, cached), or from stages built in memory. */
export class StagedFamily<Config extends MsstCommon, Spectrum, Network, BuildOptions> {
  constructor(private readonly recipe: FamilyRecipe<Config, Spectrum, Network, BuildOptions>) {}

  /** A checkpoint's network: its stages converted once (cached per checkpoint, config and `variant`), then opened. */
  async open(
    checkpoint: string,
    config: Config,
    configPath: string,
    build: { readonly options: BuildOptions; readonly variant?: string; readonly cacheDir: string },
    options: StageRunOptions,
  ): Promise<Network> {
    const { recipe } = this;
    const spectrum = recipe.spectrum(config, configPath);
    // A damaged or hostile checkpoint, or one whose weights do not fit the config, is refused before
    // it is hashed (which reads every byte): from its structure, then by building the graphs
    // against its shapes with stand-in weights (no weight read; once per pickle, config and options).
    const shapes = checkStateDict(checkpoint);
    const key = `${pickleSha256(shapes)}:${createHash('sha256').update(readFileSync(configPath)).digest('hex')}:${build.variant ?? ''}:${JSON.stringify(build.options)}:${recipe.converterVersion}`;
    await checkOnce(build.cacheDir, recipe.name, key, () => void recipe.build(config, shapes, spectrum, checkpoint, build.options));
    const { directory, stages } = await convertCached({
      checkpoint,
      configPath,
      family: recipe.name,
      converterVersion: recipe.converterVersion,
      ...(build.variant === undefined ? {} : { variant: build.variant }),
      cacheDir: build.cacheDir,
      build: () => recipe.build(config, readStateDict(checkpoint), spectrum, checkpoint, build.options),
    });
    return this.openNetwork(config, spectrum, directory, stages, options);
  }

  /** Writes the stages of weights held in memory into `directory` (benchmarks build random full-size ones). */
  writeStages(config: Config, state: ReadonlyMap<string, CheckpointTensor>, directory: string, options: BuildOptions): StageFile[] {
    return writeStageFiles(this.recipe.build(config, state, this.recipe.spectrum(config, 'the config'), 'the weights', options), directory);
  }

  /** A network from the stages `writeStages` wrote. */
  fromStages(config: Config, directory: string, files: readonly StageFile[], options: StageRunOptions): Promise<Network> {
    return this.openNetwork(config, this.recipe.spectrum(config, 'the config'), directory, files, options);
  }

  private async openNetwork(config: Config, spectrum: Spectrum, directory: string, files: readonly StageFile[], options: StageRunOptions): Promise<Network> {
    const stages = await openStages(directory, files, options);
    return this.recipe.network(config, spectrum, stages, options.onTiming);
  }
}

/** A family's network on one chunk, over its opened stages. */
export abstract class StagedChunkNetwork<Config extends MsstCommon> implements ChunkNetwork {
  protected constructor(
    readonly config: Config,
    protected readonly stages: StagedSessions,
    private readonly onTiming: ChunkTimingSink | undefined,
  ) {}

  get settings(): Config {
    return this.config;
  }

  /** One chunk [channels, chunkSize] (planar) → [stems, channels, chunkSize]. */
  abstract forward(chunk: Float32Array): Promise<Float32Array>;

  /** Reports the time since `started` as `part`; returns now, the next part's start. */
  protected lap(part: 'stft' | 'graph' | 'istft', started: number): number {
    const now = performance.now();
    this.onTiming?.(part, now - started);
    return now;
  }

  /** MSST's demix of a whole track [channels, length] → [stems, channels, length]. */
  demixTrack(track: Float32Array, options: DemixRunOptions = {}): Promise<Float32Array> {
    return demixTrack(this, track, options);
  }

  release(): Promise<void> {
    return this.stages.release();
  }
}

/** A loaded checkpoint's network as a stemsplit model (MSST's demix; `no_<target>` for a single-target model), named after the file unless named. */
export function stagedMsstModel(network: ChunkNetwork, checkpoint: string, options: MsstLoadOptions): TrackModel {
  const name = options.name ?? checkpointStem(path.basename(checkpoint));
  return msstModel(network, name, { ...options.demix, ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }) });
}
