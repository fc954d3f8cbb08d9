/**
 * The record (contract/family.ts) of stemsplit's own models: a `model.json` manifest beside its
 * ONNX graph (the bundled models, or a folder holding one). The manifest names the model, its
 * stems and terms, and a MODEL_CARD.md beside it is its card.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import { readSmallModelFile } from '../model-files/regular.js';
import type { ClaimedFile, ModelFamilyRecord } from '../contract/family.js';
import { readOptionTable } from '../contract/option-table.js';
import { SEGMENT_MODEL_OPTIONS } from '../contract/segment-options.js';
import { withSegmentKnobs, type SegmentKnobs } from '../separation/segment-knobs.js';

const MANIFEST = 'model.json';
const CARD = 'MODEL_CARD.md';

export const manifestFamily: ModelFamilyRecord = {
  id: 'onnx',
  takers: 'stemsplit model.json models',
  files: 'a stemsplit model.json (or its folder)',
  claim(file) {
    if (statSync(file).isDirectory()) {
      const manifest = path.join(file, MANIFEST);
      if (existsSync(manifest)) return readManifest(manifest);
      throw new StemsplitError('MODEL_NOT_FOUND', `${file} is a folder without ${MANIFEST}`);
    }
    return path.extname(file).toLowerCase() === '.json' ? readManifest(file) : undefined;
  },
  listedName: () => 'bundled',
  companions: () => [],
  optionTable: SEGMENT_MODEL_OPTIONS,
  options(values) {
    const bundled = readOptionTable(SEGMENT_MODEL_OPTIONS, values);
    return bundled === undefined ? undefined : { bundled };
  },
  // Its ConvInteger graph (onnx/quantize-graph.ts) stays for scripts/eval; issue 40's bar is 40 dB and faster than fp32.
  int8: () => 'its int8 stems measured 33.4 dB against fp32 on the lowest real clip (40 dB asked) and int8 ran 1.4× slower than fp32 (docs/quality.md#int8)',
  async load(model, options) {
    const { loadManifestModel } = await import('./manifest.js');
    const loaded = await loadManifestModel(model.path, {
      intraOpThreads: options.intraOpThreads,
      ...(options.precision ? { precision: options.precision } : {}),
    });
    return withSegmentKnobs(loaded, model.options?.['bundled'] as SegmentKnobs | undefined);
  },
};

interface ManifestHead {
  name?: unknown;
  sources?: unknown;
  description?: unknown;
  terms?: unknown;
}

/** A manifest is a few KB: a bigger file (or a FIFO, a device) is not one, and is not read to find out. */
const MAX_MANIFEST_BYTES = 2 ** 20;

/** What a manifest says of its model, and its card beside it. */
export function readManifest(manifestPath: string): ClaimedFile {
  let head: ManifestHead;
  try {
    head = JSON.parse(readSmallModelFile(manifestPath, 'model manifest', MAX_MANIFEST_BYTES)) as ManifestHead;
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `cannot read ${manifestPath}: ${(error as Error).message}`);
  }
  if (typeof head.name !== 'string' || !Array.isArray(head.sources)) {
    throw new StemsplitError('MODEL_INVALID', `${manifestPath} lacks a name or sources`);
  }
  const card = path.join(path.dirname(manifestPath), CARD);
  return {
    path: manifestPath,
    name: head.name,
    sources: head.sources.map(String),
    description: typeof head.description === 'string' ? head.description : '',
    ...(typeof head.terms === 'string' ? { terms: withCardPath(head.terms, manifestPath) } : {}),
    ...(existsSync(card) ? { card } : {}),
  };
}

/**
 * A manifest names a card as the repository lays it out (`models/<name>/MODEL_CARD.md`: its own, or a
 * sibling's where two models share weights), which is true only inside a clone: the card's real path
 * among the manifest's sibling folders is named instead (beside the executable's unpacked models, or
 * wherever the package is installed).
 */
function withCardPath(terms: string, manifestPath: string): string {
  const modelsDir = path.dirname(path.dirname(manifestPath));
  return terms.replace(/\bmodels\/([\w.-]+)\/MODEL_CARD\.md\b/g, (_named, model: string) => {
    const card = path.join(modelsDir, model, CARD);
    return existsSync(card) ? card : 'its model card';
  });
}
