/**
 * A bag of models (Demucs' BagOfModels) as one segment model.
 *
 * Demucs runs `apply_model` once per member and mixes the whole-track results as
 * Σ(wᵢ·yᵢ)/Σwᵢ per source. Chunking, overlap-add and normalisation are linear in the
 * model's output, so mixing the members per segment gives the same result with one
 * pass over the track. One difference, with `shifts > 0` only: Demucs draws separate
 * random offsets per member, here all members share each pass's offset.
 *
 * Members that chunk differently (another segment, or their own window per chunk: Demucs v3
 * bags mix Demucs v2 and HDemucs) cannot be mixed per segment: the bag then carries its
 * `members` and the stream runs each over the whole track.
 */
import { StemsplitError } from '../errors.js';
import type { SegmentModel } from './model.js';

/** @param weights one row per member, one column per source (Demucs' `weights`). */
export function combineBag(members: readonly SegmentModel[], weights: readonly (readonly number[])[], name?: string): SegmentModel {
  const first = members[0];
  if (first === undefined) throw invalid('a bag needs at least one model');
  checkMembers(first, members, weights);
  const totals = first.sources.map((_, source) => weights.reduce((sum, row) => sum + (row[source] ?? 0), 0));
  const zero = totals.findIndex((total) => total === 0);
  if (zero >= 0) throw invalid(`bag weights of source ${first.sources[zero] ?? zero} sum to 0`);
  const planeLength = 2 * first.segmentSamples;
  const bag = {
    name: name ?? first.name,
    sampleRate: first.sampleRate,
    sources: first.sources,
    segmentSamples: Math.max(...members.map((member) => member.segmentSamples)),
    normalize: first.normalize,
    async dispose(): Promise<void> {
      await Promise.all(members.map((member) => member.dispose()));
    },
  };
  if (!sameChunking(first, members)) {
    return {
      ...bag,
      bagMembers: members.map((model, index) => ({ model, weights: weights[index] ?? [] })),
      run(): Promise<Float32Array> {
        return Promise.reject(new Error(`bag ${bag.name}: its members chunk differently, so only separateStream runs it`));
      },
    };
  }

  return {
    ...bag,
    async run(segment: Float32Array): Promise<Float32Array> {
      const mixed = new Float32Array(first.sources.length * planeLength);
      for (const [index, member] of members.entries()) {
        const output = await member.run(segment);
        const row = weights[index] ?? [];
        for (let source = 0; source < first.sources.length; source++) {
          const weight = row[source] ?? 0;
          if (weight === 0) continue; // One-hot bags (htdemucs_ft) skip most of the work.
          const from = source * planeLength;
          for (let i = from; i < from + planeLength; i++) mixed[i] = (mixed[i] ?? 0) + weight * (output[i] ?? 0);
        }
      }
      for (let source = 0; source < first.sources.length; source++) {
        const total = totals[source] ?? 1;
        const from = source * planeLength;
        for (let i = from; i < from + planeLength; i++) mixed[i] = (mixed[i] ?? 0) / total;
      }
      return mixed;
    },
  };
}

function checkMembers(first: SegmentModel, members: readonly SegmentModel[], weights: readonly (readonly number[])[]): void {
  if (weights.length !== members.length) throw invalid(`${weights.length} weight rows for ${members.length} models`);
  for (const [index, member] of members.entries()) {
    const same = member.sampleRate === first.sampleRate && member.normalize === first.normalize && member.sources.join() === first.sources.join();
    if (!same) throw invalid(`bag member ${index} (${member.name}) differs from member 0 in rate, normalisation or sources`);
    if (member.bagMembers !== undefined) throw invalid(`bag member ${index} (${member.name}) is a bag itself`);
    const row = weights[index] ?? [];
    if (row.length !== first.sources.length || row.some((w) => !Number.isFinite(w) || w < 0)) {
      throw invalid(`bag weights row ${index} must hold ${first.sources.length} finite weights ≥ 0`);
    }
  }
}

function invalid(message: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', message);
}

/** Whether every member takes the same fixed segment, so their outputs can be mixed per segment. */
function sameChunking(first: SegmentModel, members: readonly SegmentModel[]): boolean {
  return members.every((member) => member.segmentSamples === first.segmentSamples && member.windowSamples === undefined);
}
