/**
 * The options every segment model takes (Demucs' and stemsplit's own): rows both families' options
 * tables share; separation/segment-knobs.ts makes the model they ask for.
 */
import type { FamilyOption } from './family.js';

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
