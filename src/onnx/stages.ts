/**
 * A network converted from a checkpoint into one or more ONNX stages, cached on disk by the
 * checkpoint's and config's SHA-256 and the converter's version, and run stage after stage.
 * Several stages keep a large network's peak memory at one stage's (RoFormer); a small one is
 * a single stage.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { StemsplitError } from '../errors.js';
import { sha256File } from '../model-files/sha256.js';
import { cacheEntryDir, readCachedManifest, storeEntry } from './cache.js';
import type { OnnxGraph } from './graph.js';
import { writeModel } from './graph.js';
import { createOrtSession, runTensors, type Float32Tensor, type OrtSessionHandle, type OrtSessionOptions } from './session.js';

/** A graph to write: it reads `inputs` (the previous stage's output first, then earlier outputs by name) and writes `output`. */
export interface GraphStage {
  readonly name: string;
  readonly graph: OnnxGraph;
  readonly inputs: readonly string[];
  readonly output: string;
  /** Outputs besides `output`, which later stages or the caller read by name (`runNamed`). */
  readonly extraOutputs?: readonly string[];
}

/** A converted stage on disk: its file and the tensors it reads and writes. */
export interface StageFile {
  readonly file: string;
  readonly inputs: readonly string[];
  readonly output: string;
  readonly extraOutputs?: readonly string[];
}

/**
 * Session options for stages that run one after another: no arena keeping each stage's peak, no
 * memory pattern (its one block per run held more than the tensors live at once: docs/benchmarks.md),
 * no spinning threads taking the next stage's cores.
 */
export const STAGE_SESSION_OPTIONS = { cpuMemArena: false, memPattern: false, allowSpinning: false } as const satisfies OrtSessionOptions;

export interface ConvertRequest {
  readonly checkpoint: string;
  /** The config file beside the checkpoint; absent where the checkpoint holds its own (Demucs). */
  readonly configPath?: string;
  /** Folder of the cache (`<cacheDir>/<family>`) and the manifest's format name. */
  readonly family: string;
  /** Bump when the graph layout changes, so caches convert again. */
  readonly converterVersion: number;
  /** Anything besides the two files that changes the graphs (a model type given by the user). */
  readonly variant?: string;
  readonly cacheDir: string;
  /** Builds the stages from the checkpoint (called only on a cache miss). */
  readonly build: () => readonly GraphStage[];
}

/** Converts unless the cache holds this checkpoint + config already; returns the entry's directory and stages. */
export async function convertCached(request: ConvertRequest): Promise<{ directory: string; stages: readonly StageFile[] }> {
  let checkpointSha: string;
  try {
    checkpointSha = await sha256File(request.checkpoint);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read checkpoint ${request.checkpoint}`, { cause: error });
  }
  const config = request.configPath === undefined ? '' : readFileSync(request.configPath);
  const configSha = createHash('sha256')
    .update(config)
    .update(request.variant ?? '')
    .digest('hex');
  const key = createHash('sha256').update(`${checkpointSha}:${configSha}`).digest('hex');
  const directory = cacheEntryDir(request.cacheDir, key, request.converterVersion, request.family);
  const format = `stemsplit-${request.family}/1`;
  const cached = (await readCachedManifest(directory)) as { format?: unknown; stages?: StageFile[] } | undefined;
  if (cached?.format === format && Array.isArray(cached.stages)) return { directory, stages: cached.stages };

  const built = request.build();
  const stages = built.map(stageFile);
  const manifest = { format, checkpointSha256: checkpointSha, configSha256: configSha, stages };
  await storeEntry(directory, (dir) => void writeStageFiles(built, dir), manifest);
  return { directory, stages };
}

function stageFile(stage: GraphStage, index: number): StageFile {
  const file = `${String(index).padStart(2, '0')}-${stage.name}.onnx`;
  return { file, inputs: stage.inputs, output: stage.output, ...(stage.extraOutputs === undefined ? {} : { extraOutputs: stage.extraOutputs }) };
}

/** Writes built stages into `directory` (benchmarks write random full-size ones outside the cache). */
export function writeStageFiles(stages: readonly GraphStage[], directory: string): StageFile[] {
  return stages.map((stage, index) => {
    const file = stageFile(stage, index);
    writeModel(stage.graph.encode(), path.join(directory, file.file));
    return file;
  });
}

/** Sessions over stage files, run in order. */
export class StagedSessions {
  private constructor(private readonly stages: readonly { readonly stage: StageFile; readonly session: OrtSessionHandle }[]) {}

  static async open(directory: string, files: readonly StageFile[], options: OrtSessionOptions = {}): Promise<StagedSessions> {
    const stages: { stage: StageFile; session: OrtSessionHandle }[] = [];
    try {
      for (const stage of files) stages.push({ stage, session: await createOrtSession(path.join(directory, stage.file), options) });
    } catch (error) {
      await Promise.all(stages.map(({ session }) => session.release()));
      throw error;
    }
    return new StagedSessions(stages);
  }

  /**
   * Each stage reads the previous one's output first, then any earlier outputs, or the first
   * stage's input, by name (each kept only while a later stage reads it).
   */
  async run(input: Float32Tensor): Promise<Float32Tensor> {
    const tensors = new Map<string, Float32Tensor>();
    const lastReader = new Map<string, number>();
    this.stages.forEach(({ stage }, index) => stage.inputs.slice(1).forEach((name) => lastReader.set(name, index)));
    const inputName = this.stages[0]?.stage.inputs[0];
    if (inputName !== undefined && lastReader.has(inputName)) tensors.set(inputName, input);
    let current = input;
    for (const [index, { stage, session }] of this.stages.entries()) {
      const feeds: Record<string, Float32Tensor> = {};
      stage.inputs.forEach((name, i) => {
        const tensor = i === 0 ? current : tensors.get(name);
        if (!tensor) throw new StemsplitError('SEPARATION_FAILED', `stage ${stage.file} reads ${name}, which no earlier stage wrote`);
        feeds[name] = tensor;
      });
      // Here, not after the run: the loop's previous `feeds` still held the last stage's input then.
      collectGarbage();
      const result = await runTensors(session, feeds, [stage.output]);
      current = result[stage.output] as Float32Tensor;
      for (const name of stage.inputs.slice(1)) if (lastReader.get(name) === index) tensors.delete(name);
      if ((lastReader.get(stage.output) ?? -1) > index) tensors.set(stage.output, current);
    }
    return current;
  }

  /**
   * Runs the stages on tensors by name: each stage reads every input by name from `feeds` or an
   * earlier stage's outputs, each kept only until its last reader unless `results` names it.
   * Returns the tensors `results` names.
   */
  async runNamed(feeds: Readonly<Record<string, Float32Tensor>>, results: readonly string[]): Promise<Record<string, Float32Tensor>> {
    const wanted = new Set(results);
    const lastReader = new Map<string, number>();
    this.stages.forEach(({ stage }, index) => stage.inputs.forEach((name) => lastReader.set(name, index)));
    const tensors = new Map(Object.entries(feeds));
    for (const [index, { stage, session }] of this.stages.entries()) {
      const stageFeeds: Record<string, Float32Tensor> = {};
      for (const name of stage.inputs) {
        const tensor = tensors.get(name);
        if (!tensor) throw new StemsplitError('SEPARATION_FAILED', `stage ${stage.file} reads ${name}, which neither the feeds nor an earlier stage hold`);
        stageFeeds[name] = tensor;
        if (lastReader.get(name) === index && !wanted.has(name)) tensors.delete(name);
      }
      collectGarbage();
      const outputs = [stage.output, ...(stage.extraOutputs ?? [])];
      const written = await runTensors(session, stageFeeds, outputs);
      for (const name of outputs) if (wanted.has(name) || (lastReader.get(name) ?? -1) > index) tensors.set(name, written[name] as Float32Tensor);
    }
    const out: Record<string, Float32Tensor> = {};
    for (const name of results) {
      const tensor = tensors.get(name);
      if (!tensor) throw new StemsplitError('SEPARATION_FAILED', `no stage writes ${name}`);
      out[name] = tensor;
    }
    return out;
  }

  async release(): Promise<void> {
    await Promise.all(this.stages.map(({ session }) => session.release()));
  }
}

let fullCollection: (() => void) | undefined;

/**
 * A full V8 collection, before each stage. A stage's input is dead once the next stage has read it, but V8 frees an
 * ArrayBuffer's memory only when it collects the object, and with a JS heap of a few megabytes it
 * collects seldom: MDX23C's peak held 120 MiB of earlier stages' outputs (docs/mdx23c.md). With
 * a small heap a full collection takes milliseconds; a stage takes seconds.
 */
export function collectGarbage(): void {
  if (fullCollection === undefined) {
    setFlagsFromString('--expose-gc');
    fullCollection = runInNewContext('gc') as () => void;
  }
  fullCollection();
}
