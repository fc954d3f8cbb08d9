/**
 * Models described by a `model.json` manifest beside an ONNX graph (see ModelManifest).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { refuseLinkOutOfFolder } from '../model-files/regular.js';
import type { ModelManifest, SegmentModel } from '../separation/model.js';
import { createOrtSession, runTensors, type OrtSessionOptions } from '../onnx/session.js';
import { quantizeConvolutions } from '../onnx/quantize-graph.js';
import type { Precision } from '../onnx/quantize.js';

export const MANIFEST_FORMAT = 'stemsplit-model/1';

export interface LoadModelOptions extends OrtSessionOptions {
  /** The name the model answers to; default the manifest's `name`. */
  readonly name?: string;
  /** `int8`: the graph's learned convolutions rewritten to int8 when it loads (onnx/quantize-graph.ts); default fp32, as shipped. */
  readonly precision?: Precision;
}

/** Reads and validates a manifest without loading its graph (cheap: for listings). */
export async function readModelManifest(manifestPath: string): Promise<ModelManifest> {
  let text: string;
  try {
    text = await readFile(manifestPath, 'utf8');
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read model manifest ${manifestPath}: ${String(error)}`, { cause: error });
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${manifestPath} is not JSON: ${String(error)}`, { cause: error });
  }
  return parseModelManifest(value, manifestPath);
}

/** Checks every field of a parsed manifest; the error names the first bad field. */
export function parseModelManifest(value: unknown, where = 'model.json'): ModelManifest {
  const bad = (field: string, expected: string): StemsplitError => new StemsplitError('MODEL_INVALID', `${where}: field "${field}" must be ${expected}`);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw bad('(root)', 'an object');
  const record = value as Record<string, unknown>;
  const text = (field: string): string => {
    const field_ = record[field];
    if (typeof field_ !== 'string' || field_.trim() === '') throw bad(field, 'a non-empty string');
    return field_;
  };
  const positiveInteger = (field: string): number => {
    const field_ = record[field];
    if (typeof field_ !== 'number' || !Number.isInteger(field_) || field_ <= 0) throw bad(field, 'a positive integer');
    return field_;
  };

  if (record['format'] !== MANIFEST_FORMAT) throw bad('format', `"${MANIFEST_FORMAT}"`);
  const sources = record['sources'];
  if (!Array.isArray(sources) || sources.length === 0 || !sources.every((s) => typeof s === 'string' && s !== '')) {
    throw bad('sources', 'a non-empty array of names');
  }
  if (new Set(sources).size !== sources.length) throw bad('sources', 'free of duplicates');
  const overlap = record['overlap'];
  if (typeof overlap !== 'number' || !(overlap >= 0 && overlap < 1)) throw bad('overlap', 'a number in [0, 1)');
  if (typeof record['normalize'] !== 'boolean') throw bad('normalize', 'true or false');
  if (record['input'] !== 'waveform') throw bad('input', '"waveform"');
  const onnx = text('onnx');
  if (path.isAbsolute(onnx) || onnx.split(/[\\/]/).includes('..')) throw bad('onnx', 'a file name relative to the manifest');
  const provenance = record['provenance'];
  if (provenance !== undefined && (typeof provenance !== 'object' || provenance === null || Array.isArray(provenance))) {
    throw bad('provenance', 'an object when present');
  }
  return {
    format: MANIFEST_FORMAT,
    name: text('name'),
    description: text('description'),
    sampleRate: positiveInteger('sampleRate'),
    sources: sources as string[],
    segmentSamples: positiveInteger('segmentSamples'),
    overlap,
    normalize: record['normalize'] as boolean,
    input: 'waveform',
    onnx,
    ...(provenance === undefined ? {} : { provenance: provenance as Record<string, unknown> }),
  };
}

/** Loads a manifest's graph into an ONNX Runtime session and wraps it as a segment model. */
export async function loadManifestModel(manifestPath: string, options: LoadModelOptions = {}): Promise<SegmentModel> {
  const manifest = await readModelManifest(manifestPath);
  const folder = path.dirname(manifestPath);
  const graphPath = path.join(folder, manifest.onnx);
  refuseLinkOutOfFolder(graphPath, folder, 'graph its model.json names');
  const handle = await createOrtSession(options.precision === 'int8' ? await int8Graph(graphPath) : graphPath, { ...options, externalDataFolder: folder });
  if (!handle.inputNames.includes('mix') || !handle.outputNames.includes('stems')) {
    await handle.release();
    throw new StemsplitError(
      'MODEL_INVALID',
      `${graphPath}: a waveform graph needs input "mix" and output "stems", it has inputs [${handle.inputNames.join(', ')}] and outputs [${handle.outputNames.join(', ')}]`,
    );
  }
  const { segmentSamples, sources } = manifest;
  return {
    name: options.name ?? manifest.name,
    sampleRate: manifest.sampleRate,
    sources,
    segmentSamples,
    overlap: manifest.overlap,
    normalize: manifest.normalize,
    async run(segment: Float32Array): Promise<Float32Array> {
      const { stems } = await runTensors(handle, { mix: { data: segment, dims: [1, 2, segmentSamples] } }, ['stems']);
      const expected = [1, sources.length, 2, segmentSamples];
      if (stems === undefined || stems.dims.join() !== expected.join()) {
        throw new StemsplitError(
          'SEPARATION_FAILED',
          `${manifest.name}: output "stems" has shape [${stems?.dims.join(', ') ?? ''}], expected [${expected.join(', ')}]`,
        );
      }
      return stems.data;
    },
    dispose: () => handle.release(),
  };
}

/** The graph with its learned convolutions in int8; a graph with none to quantize loads as it is. */
async function int8Graph(graphPath: string): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(graphPath);
  } catch (error) {
    throw new StemsplitError('MODEL_NOT_FOUND', `cannot read ${graphPath}: ${String(error)}`, { cause: error });
  }
  return quantizeConvolutions(bytes).model;
}
