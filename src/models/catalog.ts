/**
 * The official Demucs v4 releases stemsplit knows how to fetch. The part of each file name
 * after the dash is the first 8 hex digits of the file's SHA-256, which `models pull` checks.
 */
export const DEMUCS_BASE_URL = 'https://dl.fbaipublicfiles.com/demucs/hybrid_transformer/';

export interface CatalogModel {
  readonly name: string;
  readonly description: string;
  readonly sources: readonly string[];
  /** Checkpoint files; more than one makes a bag. */
  readonly files: readonly string[];
  /** Bag weights, one row per file, one column per source (absent: a single model). */
  readonly weights?: readonly (readonly number[])[];
}

const FOUR = ['drums', 'bass', 'other', 'vocals'] as const;
const SIX = ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano'] as const;

export const DEMUCS_CATALOG: readonly CatalogModel[] = Object.freeze([
  {
    name: 'htdemucs',
    description: 'Demucs v4 hybrid transformer, 4 stems (about 9 dB SDR on MUSDB18-HQ), MIT',
    sources: FOUR,
    files: ['955717e8-8726e21a.th'],
  },
  {
    name: 'htdemucs_ft',
    description: 'Demucs v4 fine-tuned bag of 4 specialists, 4 stems, best quality and 4x slower, MIT',
    sources: FOUR,
    files: ['f7e0c4bc-ba3fe64a.th', 'd12395a8-e57c48e6.th', '92cfc3b6-ef3bcb9c.th', '04573f0d-f3cf25b2.th'],
    weights: [
      [1, 0, 0, 0],
      [0, 1, 0, 0],
      [0, 0, 1, 0],
      [0, 0, 0, 1],
    ],
  },
  {
    name: 'htdemucs_6s',
    description: 'Demucs v4 hybrid transformer, 6 stems (guitar and piano are weaker), MIT',
    sources: SIX,
    files: ['5c90dfd2-34c22ccb.th'],
  },
]);

export function catalogModel(name: string): CatalogModel | undefined {
  return DEMUCS_CATALOG.find((m) => m.name === name);
}
