/**
 * The models `models pull` knows how to fetch: the official Demucs v4 releases (the part of
 * each file name after the dash is the first 8 hex digits of its SHA-256, which pull checks)
 * and well-known RoFormer checkpoints with their MSST configs.
 */
import type { MsstModelType } from '../msst/config.js';

export const DEMUCS_BASE_URL = 'https://dl.fbaipublicfiles.com/demucs/hybrid_transformer/';

/** How a model's files are run: a Demucs checkpoint, an MSST checkpoint + yaml, or UVR's MDX-Net `.onnx`. */
export type ModelFamily = 'demucs' | 'msst' | 'mdx';

/** A file fetched from its own address (RoFormer checkpoints live on several hosts). */
export interface CatalogDownload {
  readonly file: string;
  readonly url: string;
  /** The SHA-256 the file must have; absent where nobody publishes one (the first pull records it). */
  readonly sha256?: string;
  /** Where the hash comes from, said at pull. */
  readonly hashSource: string;
}

export interface CatalogModel {
  readonly name: string;
  readonly family: ModelFamily;
  readonly description: string;
  /** The weights' licence or terms as their publisher states them, or "not stated". */
  readonly terms: string;
  readonly sources: readonly string[];
  /** Checkpoint files; more than one makes a Demucs bag. A RoFormer: its checkpoint, then its yaml. */
  readonly files: readonly string[];
  /** Bag weights, one row per file, one column per source (absent: a single model). */
  readonly weights?: readonly (readonly number[])[];
  /** MSST checkpoints: MSST's model type (`--model_type`), where the yaml alone does not tell it. */
  readonly modelType?: MsstModelType;
  /** Per-file addresses and hashes (RoFormer); Demucs files come from the release folder, hash prefix in the name. */
  readonly downloads?: readonly CatalogDownload[];
}

/** The Demucs author's terms for the released weights (facebookresearch/demucs issues #327 and #508). */
export const DEMUCS_TERMS = 'research use only, per the Demucs author (facebookresearch/demucs #327, #508); the code is MIT';

const FOUR = ['drums', 'bass', 'other', 'vocals'] as const;
const SIX = ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano'] as const;

const DEMUCS_MODELS: readonly CatalogModel[] = [
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
];

/** MSST's configs, pinned to the commit the engine was checked against (github.com/ZFTurbo/Music-Source-Separation-Training). */
const MSST_CONFIGS = 'https://raw.githubusercontent.com/ZFTurbo/Music-Source-Separation-Training/ccc011abf7f89dd7922bb2888d48493b575c0289/configs/';
const MSST_CONFIG_HASH = 'computed by stemsplit from MSST at commit ccc011a';
const NO_HASH = 'none published: the first pull records the SHA-256 it received';
const NOT_STATED = 'not stated (the publisher gives no licence for these weights)';

/**
 * Well-known public RoFormer checkpoints (Music-Source-Separation-Training format), with the
 * MSST yaml that describes each. None of their publishers states a licence for the weights.
 */
const ROFORMER_MODELS: readonly CatalogModel[] = [
  {
    name: 'bs-roformer-viperx-1297',
    family: 'msst',
    description: "viperx's BS-RoFormer (ep 317, SDR 12.97 in UVR's table), vocals + no_vocals; the vocal model UVR users reach for",
    terms: NOT_STATED,
    sources: ['vocals', 'no_vocals'],
    files: ['model_bs_roformer_ep_317_sdr_12.9755.ckpt', 'model_bs_roformer_ep_317_sdr_12.9755.yaml'],
    downloads: [
      {
        file: 'model_bs_roformer_ep_317_sdr_12.9755.ckpt',
        url: 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models/model_bs_roformer_ep_317_sdr_12.9755.ckpt',
        sha256: '5b84f37e8d444c8cb30c79d77f613a41c05868ff9c9ac6c7049c00aefae115aa',
        hashSource: 'not published by its author; the SHA-256 another project pinned for this file',
      },
      {
        file: 'model_bs_roformer_ep_317_sdr_12.9755.yaml',
        url: `${MSST_CONFIGS}viperx/model_bs_roformer_ep_317_sdr_12.9755.yaml`,
        sha256: '42e5635ceab7287b83d9591c9880966f0b61cff26a0a40a29d236bacb32e5f2c',
        hashSource: MSST_CONFIG_HASH,
      },
    ],
  },
  {
    name: 'mel-roformer-kim-vocals',
    family: 'msst',
    description: "Kimberley Jensen's Mel-Band RoFormer (SDR vocals 10.98 on MSST's multisong set), vocals + no_vocals",
    terms: NOT_STATED,
    sources: ['vocals', 'no_vocals'],
    files: ['MelBandRoformer.ckpt', 'MelBandRoformer.yaml'],
    downloads: [
      { file: 'MelBandRoformer.ckpt', url: 'https://huggingface.co/KimberleyJSN/melbandroformer/resolve/main/MelBandRoformer.ckpt', hashSource: NO_HASH },
      {
        file: 'MelBandRoformer.yaml',
        url: `${MSST_CONFIGS}KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml`,
        sha256: 'f63f38eb1e6e40a7db0dade714a5ae257555dd8748f4e774eae8679275a81926',
        hashSource: MSST_CONFIG_HASH,
      },
    ],
  },
  {
    name: 'bs-roformer-zfturbo-4s',
    family: 'msst',
    description: "ZFTurbo's 4-stem BS-RoFormer (MUSDB18 test avg SDR 9.65); can serve the API's 4s",
    terms: NOT_STATED,
    sources: ['bass', 'drums', 'other', 'vocals'],
    files: ['model_bs_roformer_ep_17_sdr_9.6568.ckpt', 'model_bs_roformer_ep_17_sdr_9.6568.yaml'],
    downloads: [
      {
        file: 'model_bs_roformer_ep_17_sdr_9.6568.ckpt',
        url: 'https://github.com/ZFTurbo/Music-Source-Separation-Training/releases/download/v1.0.12/model_bs_roformer_ep_17_sdr_9.6568.ckpt',
        hashSource: NO_HASH,
      },
      {
        file: 'model_bs_roformer_ep_17_sdr_9.6568.yaml',
        url: 'https://github.com/ZFTurbo/Music-Source-Separation-Training/releases/download/v1.0.12/config_bs_roformer_384_8_2_485100.yaml',
        hashSource: NO_HASH,
      },
    ],
  },
];

export const MODEL_CATALOG: readonly CatalogModel[] = Object.freeze([...DEMUCS_MODELS, ...ROFORMER_MODELS]);

export function catalogModel(name: string): CatalogModel | undefined {
  return MODEL_CATALOG.find((m) => m.name === name);
}
