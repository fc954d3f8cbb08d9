/**
 * The options every segment model takes (Demucs' and stemsplit's own): rows of their families'
 * options tables (models/family.ts), and the model they make of a loaded one. The pipeline's
 * defaults stay where no option is given: the model's own overlap (Demucs' 0.25), no shifts.
 */
import type { FamilyOption } from '../models/family.js';
import type { BagMember, SegmentModel } from './model.js';
import { withTta } from './tta.js';

export interface SegmentKnobs {
  readonly shifts?: number;
  readonly overlap?: number;
  readonly tta?: boolean;
  readonly noSplit?: boolean;
}

/** Demucs' apply_model limits: up to 20 shifts is already 20 passes over the track. */
const MAX_SHIFTS = 20;

export const SEGMENT_MODEL_OPTIONS: readonly FamilyOption[] = [
  // prettier-ignore
  {
    flags: '--shifts <n>',
    key: 'shifts',
    type: 'integer',
    min: 0,
    max: MAX_SHIFTS,
    separatorSpelling: '--demucs_shifts',
    help: 'random-shift averaging passes (Demucs --shifts; slower, slightly better; default 0)',
  },
  {
    flags: '--overlap <fraction>',
    key: 'overlap',
    type: 'number',
    min: 0,
    below: 1,
    separatorSpelling: '--demucs_overlap',
    help: "share of a segment consecutive chunks overlap (Demucs --overlap; default the model's, 0.25)",
  },
  {
    flags: '--tta',
    key: 'tta',
    type: 'switch',
    help: 'test-time augmentation: also run each chunk channel-swapped and polarity-inverted, undo each, average the three (3× slower)',
  },
];

/** The model with the knobs given: its overlap and shifts replaced, its chunks (each bag member's) run with TTA. */
export function withSegmentKnobs(model: SegmentModel, knobs: SegmentKnobs | undefined): SegmentModel {
  if (knobs === undefined) return model;
  const tuned = {
    ...(knobs.overlap === undefined ? {} : { overlap: knobs.overlap }),
    ...(knobs.shifts === undefined ? {} : { shifts: knobs.shifts }),
    ...(knobs.noSplit === true ? { noSplit: true } : {}),
  };
  const runs = knobs.tta === true ? withChunkTta(model) : model;
  return Object.keys(tuned).length === 0 && runs === model ? model : delegate(runs, tuned);
}

function withChunkTta(model: SegmentModel): SegmentModel {
  const bagMembers = model.bagMembers?.map((member): BagMember => ({ model: withChunkTta(member.model), weights: member.weights }));
  const run = withTta((segment) => model.run(segment), 2);
  return delegate(model, { run, ...(bagMembers === undefined ? {} : { bagMembers }) });
}

/** The model with some members replaced, its methods still its own. */
function delegate(model: SegmentModel, changes: Partial<SegmentModel>): SegmentModel {
  return {
    name: model.name,
    sampleRate: model.sampleRate,
    sources: model.sources,
    normalize: model.normalize,
    segmentSamples: model.segmentSamples,
    ...(model.stereoForMono === undefined ? {} : { stereoForMono: model.stereoForMono }),
    ...(model.overlap === undefined ? {} : { overlap: model.overlap }),
    ...(model.shifts === undefined ? {} : { shifts: model.shifts }),
    ...(model.noSplit === undefined ? {} : { noSplit: model.noSplit }),
    ...(model.bagMembers === undefined ? {} : { bagMembers: model.bagMembers }),
    ...(model.windowSamples === undefined ? {} : { windowSamples: (chunk: number) => (model.windowSamples as (n: number) => number).call(model, chunk) }),
    run: (segment) => model.run(segment),
    dispose: () => model.dispose(),
    ...changes,
  };
}
