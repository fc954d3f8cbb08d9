/**
 * The official Demucs v4 and v3 releases `models pull` fetches: the part of each file name after the
 * dash is the first 8 hex digits of its SHA-256, which pull checks.
 */
import type { CatalogModel } from '../contract/family.js';

/** Demucs' release root (demucs/pretrained.py ROOT_URL); `remote/files.txt` names each file's folder. */
export const DEMUCS_ROOT = 'https://dl.fbaipublicfiles.com/demucs/';

/** A Demucs release: a bag when it has several files. */
export interface DemucsCatalogModel extends CatalogModel {
  /** Bag weights, one row per file, one column per source (absent: a single model). */
  readonly weights?: readonly (readonly number[])[];
  /** The `segment` (seconds) of the released bag yaml; a member whose own is shorter takes it. */
  readonly segment?: number;
}

/** The Demucs author's terms for the released weights (facebookresearch/demucs issues #327 and #508). */
export const DEMUCS_TERMS = 'research use only, per the Demucs author (facebookresearch/demucs #327, #508); the code is MIT';

const FOUR = ['drums', 'bass', 'other', 'vocals'] as const;

/** The weights of `remote/mdx.yaml` (and mdx_q's): per member, which sources it counts for. */
const MDX_WEIGHTS = [
  [1, 1, 0, 0],
  [0, 1, 0, 0],
  [1, 0, 1, 1],
  [1, 0, 1, 1],
];

/**
 * Files of Demucs' `mdx_final/` release folder (remote/files.txt), checked like the v4 ones: the 8
 * hex digits after the dash begin the file's SHA-256 (Demucs' loader checks the same).
 */
function mdxFinal(files: readonly string[]): Pick<DemucsCatalogModel, 'files' | 'downloads'> {
  return {
    files,
    downloads: files.map((file) => ({
      file,
      url: `${DEMUCS_ROOT}mdx_final/${file}`,
      sha256: file.slice(file.indexOf('-') + 1, -'.th'.length),
      hashSource: "the start of its SHA-256 in its released name, as Demucs' loader checks it",
    })),
  };
}
const SIX = ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano'] as const;

export const DEMUCS_CATALOG: readonly DemucsCatalogModel[] = [
  {
    name: 'htdemucs',
    family: 'demucs',
    description: 'Demucs v4 hybrid transformer, 4 stems (about 9 dB SDR on MUSDB18-HQ)',
    terms: DEMUCS_TERMS,
    sources: FOUR,
    files: ['955717e8-8726e21a.th'],
  },
  {
    name: 'htdemucs_ft',
    family: 'demucs',
    description: 'Demucs v4 fine-tuned bag of 4 specialists, 4 stems, best Demucs quality and 4x slower',
    terms: DEMUCS_TERMS,
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
    family: 'demucs',
    description: 'Demucs v4 hybrid transformer, 6 stems (guitar and piano are weaker)',
    terms: DEMUCS_TERMS,
    sources: SIX,
    files: ['5c90dfd2-34c22ccb.th'],
  },
  {
    name: 'hdemucs_mmi',
    family: 'demucs',
    description: "Demucs v3 hybrid (HDemucs) retrained on MUSDB18-HQ + 800 songs, 4 stems; bass SDR 12.23 in python-audio-separator's table (htdemucs: 11.64)",
    terms: DEMUCS_TERMS,
    sources: FOUR,
    files: ['75fc33f5-1941ce65.th'],
    segment: 44,
  },
  {
    name: 'mdx',
    family: 'demucs',
    description: 'Demucs v3 bag (2 time-domain Demucs, 2 HDemucs) trained on MUSDB18-HQ only, 4 stems; won track A of the MDX 2021 challenge',
    terms: DEMUCS_TERMS,
    sources: FOUR,
    ...mdxFinal(['0d19c1c6-0f06f20e.th', '7ecf8ec1-70f50cc9.th', 'c511e2ab-fe698775.th', '7d865c68-3d5dd56b.th']),
    weights: MDX_WEIGHTS,
    segment: 44,
  },
  {
    name: 'mdx_extra',
    family: 'demucs',
    description:
      'Demucs v3 bag of 4 HDemucs trained with extra data (the MUSDB18 test set included, so MUSDB scores flatter it), 4 stems; 2nd on MDX 2021 track B',
    terms: DEMUCS_TERMS,
    sources: FOUR,
    ...mdxFinal(['e51eebcc-c1b80bdd.th', 'a1d90b5c-ae9d2452.th', '5d2d6c55-db83574e.th', 'cfa93e08-61801ae1.th']),
    segment: 44,
  },
  {
    name: 'mdx_q',
    family: 'demucs',
    description: 'mdx quantized with diffq: a smaller download, quality maybe a bit lower (Demucs README), 4 stems',
    terms: DEMUCS_TERMS,
    sources: FOUR,
    ...mdxFinal(['6b9c2ca1-3fd82607.th', 'b72baf4e-8778635e.th', '42e558d4-196e0e1b.th', '305bc58f-18378783.th']),
    weights: MDX_WEIGHTS,
    segment: 44,
  },
  {
    name: 'mdx_extra_q',
    family: 'demucs',
    description: 'mdx_extra quantized with diffq: a smaller download, quality maybe a bit lower (Demucs README), 4 stems',
    terms: DEMUCS_TERMS,
    sources: FOUR,
    ...mdxFinal(['83fc094f-4a16d450.th', '464b36d7-e5a9386e.th', '14fc6a69-a89dd0ee.th', '7fd6ef75-a905dd85.th']),
    segment: 44,
  },
];
