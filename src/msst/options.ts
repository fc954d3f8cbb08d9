/**
 * The MSST family's options table (contract/family.ts) and the run's options read from it: the
 * model type, what a run may change of its yaml's chunking (python-audio-separator's MDXC separator
 * spells them `--mdxc_*`), MSST's `--use_tta` and UVR's spectral inversion.
 */
import type { FamilyOption, FamilyOptions } from '../contract/family.js';
import { readOptionTable } from '../contract/option-table.js';
import { SEGMENT_FLAG } from './config.js';
import { MSST_MODEL_TYPES } from './model-types.js';
import type { DemixKnobs } from './network.js';

/** python-audio-separator's `--mdxc_segment_size` default, which its `--mdxc_override_model_segment_size` alone applies. */
export const SEPARATOR_SEGMENT_SIZE = 256;

export const MSST_OPTION_TABLE: readonly FamilyOption[] = [
  {
    flags: '--model-type <type>',
    key: 'modelType',
    type: 'choice',
    choices: MSST_MODEL_TYPES,
    help: "an MSST checkpoint's model type (default: told from the yaml)",
  },
  {
    flags: `${SEGMENT_FLAG} <frames>`,
    key: 'segmentSize',
    type: 'integer',
    min: 2,
    max: 4096,
    separatorSpelling: '--mdxc_segment_size',
    help: "MSST: STFT frames per chunk, a chunk of hop·(frames − 1) samples instead of the yaml's chunk_size; each size is its own converted graph (default the yaml's)",
  },
  {
    flags: '--mdxc-override-model-segment-size',
    key: 'overrideSegmentSize',
    type: 'switch',
    separatorSpelling: '--mdxc_override_model_segment_size',
    help: `MSST: taken for python-audio-separator command lines; alone it sets ${SEGMENT_FLAG} ${SEPARATOR_SEGMENT_SIZE} (its default), and ${SEGMENT_FLAG} applies without it`,
  },
  {
    flags: '--mdxc-overlap <n>',
    key: 'numOverlap',
    type: 'integer',
    min: 1,
    max: 50,
    separatorSpelling: '--mdxc_overlap',
    help: "MSST: chunks overlapping each sample, inference.num_overlap (default the yaml's)",
  },
  {
    flags: '--mdxc-batch-size <n>',
    key: 'batchSize',
    type: 'integer',
    min: 1,
    max: 64,
    separatorSpelling: '--mdxc_batch_size',
    help: "MSST: chunks per batch, inference.batch_size; it changes which chunks fade at the track's ends (default the yaml's)",
  },
  {
    flags: '--invert-spect',
    key: 'invertSpect',
    type: 'switch',
    separatorSpelling: '--invert_spect',
    help: "MSST: no_<target> (a multi-stem model: --two-stems X's no_X) by UVR's spectral inversion of the mix and the target, not their difference (or the others' sum)",
  },
  {
    flags: '--tta',
    key: 'tta',
    type: 'switch',
    help: "MSST's --use_tta: also run each chunk channel-swapped and polarity-inverted, undo each, average the three (3× slower)",
  },
];

/** The run's MSST options: `modelType`, `segmentSize` (the network's), `demix` (DemixKnobs); undefined when none was given. */
export function msstOptions(values: Readonly<Record<string, unknown>>): FamilyOptions | undefined {
  const read = readOptionTable(MSST_OPTION_TABLE, values);
  if (read === undefined) return undefined;
  const { modelType, segmentSize, overrideSegmentSize, ...demix } = read;
  // The switch is kept as given (the record reads every row under its key), and alone means the default size.
  const segment = segmentSize ?? (overrideSegmentSize === true ? SEPARATOR_SEGMENT_SIZE : undefined);
  return {
    ...(modelType === undefined ? {} : { modelType }),
    ...(segment === undefined ? {} : { segmentSize: segment }),
    ...(overrideSegmentSize === undefined ? {} : { overrideSegmentSize }),
    ...(Object.keys(demix).length > 0 ? { demix } : {}),
  };
}

/** What a loaded MSST network takes of the run's options. */
export function msstLoadOptions(options: FamilyOptions | undefined): { readonly demix?: DemixKnobs; readonly segmentSize?: number } {
  const demix = options?.['demix'] as DemixKnobs | undefined;
  const segmentSize = options?.['segmentSize'];
  return { ...(demix === undefined ? {} : { demix }), ...(typeof segmentSize === 'number' ? { segmentSize } : {}) };
}
