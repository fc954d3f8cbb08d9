/**
 * The model a segment model's knobs make of a loaded one (their table: contract/segment-options.ts).
 * The pipeline's defaults stay where no option is given: the model's own overlap (Demucs' 0.25), no shifts.
 */
import type { BagMember, SegmentModel } from './model.js';
import { withTta } from './tta.js';

export interface SegmentKnobs {
  readonly shifts?: number;
  readonly overlap?: number;
  readonly tta?: boolean;
  readonly noSplit?: boolean;
}

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
