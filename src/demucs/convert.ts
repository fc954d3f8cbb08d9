/**
 * Checkpoint → ONNX conversion, cached: a converted model is a directory of stage graphs
 * plus `model.json`, keyed by the checkpoint's SHA-256 and the converter version.
 */
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { sha256File } from '../model-files/sha256.js';
import { cacheEntryDir, checkOnce, readCachedManifest, storeEntry } from '../onnx/cache.js';
import { pickleSha256, type Checkpoint } from '../torch/checkpoint.js';
import { checkDemucsCheckpoint, readDemucsCheckpoint } from './checkpoint.js';
import { parseHTDemucsConfig } from './config.js';
import { buildHTDemucsGraph, type GraphStage } from './htdemucs-graph.js';
import { writeModel } from '../onnx/graph.js';
import { precisionKey, type Precision } from '../onnx/quantize.js';
import { parseV3Config, V3_CLASSES } from './v3-config.js';
import { v3Parameters } from './v3-parameters.js';
import { StateReader } from '../torch/state-reader.js';

/** One stage of a converted model: its ONNX file and the named tensors it reads and writes. */
export interface ConvertedStage extends Omit<GraphStage, 'graph'> {
  /** File name inside the model's directory. */
  readonly file: string;
}

/** A converted checkpoint: what its stages need to run (`model.json` in its directory). */
export interface ConvertedModel {
  readonly format: typeof META_FORMAT;
  readonly checkpointSha256: string;
  /** Directory holding the stage files. */
  readonly directory: string;
  readonly stages: readonly ConvertedStage[];
  readonly sources: readonly string[];
  readonly sampleRate: number;
  readonly segmentSamples: number;
  readonly nfft: number;
  readonly audioChannels: number;
  /** What the graphs compute in (absent in caches written before int8 existed: fp32). */
  readonly precision?: Precision;
}

/** Bump when the graph layout changes, so caches convert again. */
const CONVERTER_VERSION = 9;
const META_FORMAT = 'stemsplit-demucs/2';

export interface ConvertOptions {
  /** `int8`: the transformer's and projections' matrix products in int8 (onnx/quantize.ts). Default fp32. */
  readonly precision?: Precision;
}

/**
 * Converts a checkpoint to ONNX unless the cache already holds it; returns where it is.
 * Cheap on a cache hit: the checkpoint is only hashed. Each precision is its own cache entry.
 */
export async function convertCheckpoint(file: string, cacheDir: string, options: ConvertOptions = {}): Promise<ConvertedModel> {
  const result = await convertOrRead(file, cacheDir, options);
  if ('converted' in result) return result.converted;
  throw new StemsplitError('MODEL_INVALID', `${file} holds a ${result.v3.klass}, which runs without conversion (loadDemucs)`);
}

/**
 * An HTDemucs converted (or found in the cache), or a Demucs v3/v2 checkpoint's class and kwargs
 * (`v3`, its tensors stand-ins: checked, not read): those convert per window length as they open
 * (segment-model-v3.ts), reading the weights only when a conversion is not in the cache.
 */
export async function convertOrRead(
  file: string,
  cacheDir: string,
  options: ConvertOptions = {},
): Promise<{ readonly converted: ConvertedModel } | { readonly v3: Checkpoint }> {
  const precision = options.precision ?? 'fp32';
  // A damaged or hostile checkpoint, or one whose weights do not fit its class and kwargs, is refused
  // before it is hashed (which reads every byte): from its structure, then by its shapes (no weight read).
  const shapes = checkDemucsCheckpoint(file);
  if (shapes.klass in V3_CLASSES) {
    checkV3Shapes(shapes, file);
    return { v3: shapes };
  }
  await checkOnce(cacheDir, 'demucs', `${pickleSha256(shapes)}:${CONVERTER_VERSION}`, () => checkHTDemucsShapes(shapes, file));
  let sha256: string;
  try {
    sha256 = await sha256File(file);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read checkpoint ${file}`, { cause: error });
  }
  const directory = cacheEntryDir(cacheDir, `${sha256}${precisionKey(precision)}`, CONVERTER_VERSION, 'demucs');
  const cached = await readCachedManifest(directory);
  if (isConvertedModel(cached)) return { converted: { ...cached, directory } };

  const checkpoint = readDemucsCheckpoint(file);
  const config = parseHTDemucsConfig(checkpoint.kwargs);
  const { stages } = buildHTDemucsGraph(config, checkpoint.state, { precision });
  const converted: ConvertedModel = {
    format: META_FORMAT,
    checkpointSha256: sha256,
    directory,
    stages: stages.map((stage, index) => ({
      name: stage.name,
      file: `${String(index).padStart(2, '0')}-${stage.name}.onnx`,
      inputs: stage.inputs,
      outputs: stage.outputs,
    })),
    sources: config.sources,
    sampleRate: config.samplerate,
    segmentSamples: config.segmentSamples,
    nfft: config.nfft,
    audioChannels: config.audioChannels,
    precision,
  };
  const writeStages = (dir: string): void => {
    stages.forEach((stage, index) => writeModel(stage.graph.encode(), path.join(dir, (converted.stages[index] as ConvertedStage).file)));
  };
  await storeEntry(directory, writeStages, converted);
  return { converted };
}

/** The graphs built against the checkpoint's stand-in weights (fp32: int8 changes no shape). */
function checkHTDemucsShapes(shapes: Checkpoint, file: string): void {
  if (shapes.klass !== 'demucs.htdemucs.HTDemucs') {
    throw new StemsplitError('MODEL_INVALID', `unsupported class ${shapes.klass} in checkpoint ${file} (Demucs runs HTDemucs, HDemucs and Demucs)`);
  }
  buildHTDemucsGraph(parseHTDemucsConfig(shapes.kwargs), shapes.state);
}

/**
 * A v3/v2 state against the parameters its class constructs (v3-parameters.ts), each by name and
 * shape through the shared state reader. A diffq-quantized state has no names: its packed levels
 * are checked against the same list as they are unpacked.
 */
function checkV3Shapes(shapes: Checkpoint, file: string): void {
  if (shapes.quantized !== undefined) return;
  const reader = new StateReader(shapes.state, file);
  const config = parseV3Config(V3_CLASSES[shapes.klass] as 'HDemucs' | 'Demucs', shapes.kwargs);
  for (const [name, shape] of v3Parameters(config)) reader.get(name, shape);
  reader.refuseUnused(config.klass);
}

function isConvertedModel(value: unknown): value is ConvertedModel {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  return (
    record['format'] === META_FORMAT &&
    Array.isArray(record['stages']) &&
    Array.isArray(record['sources']) &&
    typeof record['segmentSamples'] === 'number' &&
    typeof record['sampleRate'] === 'number' &&
    typeof record['nfft'] === 'number' &&
    typeof record['audioChannels'] === 'number'
  );
}
