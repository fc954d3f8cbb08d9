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
import { readCheckpoint, type CheckpointTensor } from '../torch/checkpoint.js';
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
}

/** Loads a Demucs checkpoint (`.th`) or bag (`.yaml`) as one segment model. */
export async function loadDemucs(file: string, options: LoadDemucsOptions): Promise<SegmentModel> {
  const name = options.name ?? path.basename(file).replace(/\.(th|ya?ml)$/, '');
  if (/\.ya?ml$/.test(file)) return loadBag(file, name, options);
  const result = await convertOrRead(file, options.cacheDir, options.precision === undefined ? {} : { precision: options.precision });
  if ('converted' in result) return openHTDemucs(result.converted, name, options);
  const config = parseV3Config(V3_CLASSES[result.v3.klass] as 'HDemucs' | 'Demucs', result.v3.kwargs);
  // The weights are read only for a conversion the cache lacks (each window length's its own read).
  const read = (): ReadonlyMap<string, CheckpointTensor> => {
    const checkpoint = readCheckpoint(file);
    // mdx_q, mdx_extra_q: diffq's packed levels stand in for the state_dict.
    return checkpoint.quantized === undefined ? checkpoint.state : dequantizeState(readDiffqState(checkpoint.quantized), v3Parameters(config));
  };
  const weights = { file, read, cache: { checkpoint: file, cacheDir: options.cacheDir } };
  return openV3(config, weights, name, {
    ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
    ...(options.precision === undefined ? {} : { precision: options.precision }),
    ...(options.bagSegment === undefined ? {} : { bagSegment: options.bagSegment }),
  });
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
