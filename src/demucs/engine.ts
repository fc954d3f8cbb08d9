/**
 * Demucs checkpoints as segment models: an official `.th` (converted to ONNX once, cached)
 * or a bag `.yaml` of them.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { SegmentModel } from '../separation/model.js';
import { combineBag } from '../separation/bag.js';
import { parseBagFile, resolveMember } from './bag-file.js';
import type { Precision } from '../onnx/quantize.js';
import { convertOrRead } from './convert.js';
import { openHTDemucs, type TimingSink } from './segment-model.js';
import { openV3 } from './segment-model-v3.js';
import { V3_CLASSES, parseV3Config } from './v3-config.js';
import { v3Parameters } from './v3-parameters.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { readDemucsCheckpoint } from './checkpoint.js';
import { dequantizeState, readDiffqState } from './diffq.js';

export interface LoadDemucsOptions {
  /** Where converted graphs are kept (a `demucs/` folder is made inside). */
  readonly cacheDir: string;
  /** Threads per ONNX operator; default ONNX Runtime's choice. */
  readonly intraOpThreads?: number;
  /** The name the model answers to; default the file's name without extension. */
  readonly name?: string;
  /** `int8`: convert (and cache) the graphs with int8 matrix products; default fp32. */
  readonly precision?: Precision;
  /** Receives how long each part of every segment took (benchmarks). */
  readonly onTiming?: TimingSink;
  /** The bag's `segment` (seconds), for a member: a v3/v2 model whose own is shorter takes it (BagOfModels). */
  readonly bagSegment?: number;
  /** The run's `--segment` (seconds), apply_model's `segment`: any length for v3/v2, at most the trained one for HTDemucs. */
  readonly segment?: number;
}

/** Loads a Demucs checkpoint (`.th`) or bag (`.yaml`) as one segment model. */
export async function loadDemucs(file: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  const name = options.name ?? path.basename(file).replace(/\.(th|ya?ml)$/, '');
  if (/\.ya?ml$/.test(file)) return loadBag(file, name, options);
  const result = await convertOrRead(file, options.cacheDir, options.precision === undefined ? {} : { precision: options.precision });
  if ('converted' in result) {
    const model = await openHTDemucs(result.converted, name, options);
    return options.segment === undefined ? model : shorterSegment(model, options.segment);
  }
  const config = parseV3Config(V3_CLASSES[result.v3.klass] as 'HDemucs' | 'Demucs', result.v3.kwargs);
  // The weights are read only for a conversion the cache lacks (each window length's its own read).
  const read = (): ReadonlyMap<string, CheckpointTensor> => {
    const checkpoint = readDemucsCheckpoint(file);
    // mdx_q, mdx_extra_q: diffq's packed levels stand in for the state_dict.
    return checkpoint.quantized === undefined ? checkpoint.state : dequantizeState(readDiffqState(checkpoint.quantized), v3Parameters(config));
  };
  const weights = { file, read, cache: { checkpoint: file, cacheDir: options.cacheDir } };
  return openV3(config, weights, name, {
    ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
    ...(options.precision === undefined ? {} : { precision: options.precision }),
    ...(options.bagSegment === undefined ? {} : { bagSegment: options.bagSegment }),
    ...(options.segment === undefined ? {} : { segment: options.segment }),
  });
}

/**
 * HTDemucs with a shorter `--segment`: chunks of that length, each zero-padded on the right to the
 * trained length and the output cut back, as HTDemucs.forward pads what apply_model hands it. A
 * longer segment is refused, as Demucs refuses it ("Cannot use a Transformer model with a longer
 * segment than it was trained for").
 */
async function shorterSegment(model: SegmentModel, seconds: number): Promise<SegmentModel> {
  const trained = model.segmentSamples;
  const samples = Math.trunc(model.sampleRate * seconds);
  if (samples > trained || samples < 1) {
    await model.dispose();
    const most = (trained / model.sampleRate).toFixed(2);
    throw new StemsplitError('USAGE', `--segment ${seconds}: ${model.name} is a Transformer model trained on ${most} s segments; give at most ${most}`);
  }
  if (samples === trained) return model;
  const run = async (segment: Float32Array): Promise<Float32Array> => {
    const padded = new Float32Array(2 * trained);
    padded.set(segment.subarray(0, samples), 0);
    padded.set(segment.subarray(samples, 2 * samples), trained);
    const output = await model.run(padded);
    const planes = output.length / trained;
    const cut = new Float32Array(planes * samples);
    for (let plane = 0; plane < planes; plane++) cut.set(output.subarray(plane * trained, plane * trained + samples), plane * samples);
    return cut;
  };
  return {
    name: model.name,
    sampleRate: model.sampleRate,
    sources: model.sources,
    normalize: model.normalize,
    segmentSamples: samples,
    run,
    dispose: () => model.dispose(),
  };
}

async function loadBag(file: string, name: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read bag ${file}`, { cause: error });
  }
  const bag = parseBagFile(text, file);
  const directory = path.dirname(file);
  const members: SegmentModel[] = [];
  try {
    for (const member of bag.models) {
      const memberPath = resolveMember(directory, member);
      members.push(await loadDemucs(memberPath, { ...options, name: member, ...(bag.segment === undefined ? {} : { bagSegment: bag.segment }) }));
    }
    const sources = (members[0] as SegmentModel).sources.length;
    const weights = bag.weights ?? bag.models.map(() => new Array<number>(sources).fill(1));
    return combineBag(members, weights, name);
  } catch (error) {
    await Promise.all(members.map((member) => member.dispose()));
    throw error;
  }
}
