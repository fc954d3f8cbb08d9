/**
 * The models `models pull` knows how to fetch: the official Demucs v4 and v3 releases (the part
 * of each file name after the dash is the first 8 hex digits of its SHA-256, which pull checks),
 * the most used MSST checkpoints (BS/Mel-Band RoFormer, SCNet, MDX23C) with their yaml, and
 * UVR's most used MDX-Net `.onnx` models with their model data. Stem names are lower-case; terms
 * follow one rule (MSST_TERMS below). docs/models.md lists them all, with where each file and
 * hash comes from; scripts/catalog-check.ts compares them with the publishers' own lists.
 */
import type { UvrModelData } from '../mdx/model-data.js';
import type { MsstModelType } from '../msst/config.js';

/** Demucs' release root (demucs/pretrained.py ROOT_URL); `remote/files.txt` names each file's folder. */
const DEMUCS_ROOT = 'https://dl.fbaipublicfiles.com/demucs/';

/** How a model's files are run: a Demucs checkpoint, an MSST checkpoint + yaml, UVR's MDX-Net `.onnx` or UVR's VR `.pth`. */
export type ModelFamily = 'demucs' | 'msst' | 'mdx' | 'vr';

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
  /** Demucs: the `segment` (seconds) of the released bag yaml; a member whose own is shorter takes it. */
  readonly segment?: number;
  /** MSST checkpoints: MSST's model type (`--model_type`), where the yaml alone does not tell it. */
  readonly modelType?: MsstModelType;
  /** Per-file addresses and hashes (MSST, MDX-Net); Demucs files come from the release folder, hash prefix in the name. */
  readonly downloads?: readonly CatalogDownload[];
  /**
   * MDX-Net: the model data UVR keeps for this file (its keys, as in UVR's model_data_new.json),
   * written as `NAME.json` beside the `.onnx` at pull, so the model runs whether or not the
   * engine's built-in table knows it.
   */
  readonly mdxModelData?: UvrModelData;
  /** MDX-Net: the key of that data in UVR's table (MD5 of the file's last 10,240,000 bytes); pull checks it. */
  readonly uvrHash?: string;
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
function mdxFinal(files: readonly string[]): Pick<CatalogModel, 'files' | 'downloads'> {
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

/** MSST's configs, pinned to the commit the engine was checked against (github.com/ZFTurbo/Music-Source-Separation-Training). */
const MSST_CONFIGS = 'https://raw.githubusercontent.com/ZFTurbo/Music-Source-Separation-Training/ccc011abf7f89dd7922bb2888d48493b575c0289/configs/';
const MSST_CONFIG_HASH = 'computed by stemsplit from MSST at commit ccc011a';
const NO_HASH = 'none published: the first pull records the SHA-256 it received';
/**
 * The terms rule, for every entry: what the weights' publisher states and where; "not stated"
 * only where the publisher's page states nothing, naming that page.
 */
const MSST_TERMS = "not stated for the weights: MSST's pretrained-models table gives no licence (the repository's MIT licence covers its code)";
const HUGGING_FACE_NO_LICENCE = (repo: string): string => `not stated: the publisher's Hugging Face page (huggingface.co/${repo}) gives no licence`;

/** MSST's release assets (github.com/ZFTurbo/Music-Source-Separation-Training/releases), as its pretrained-models table links them. */
const MSST_RELEASES = 'https://github.com/ZFTurbo/Music-Source-Separation-Training/releases/download/';
/** UVR's public model repository (the files UVR and python-audio-separator download). */
const UVR_MODELS = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models/';
/** UVR's application data (model configs), pinned to the commit read. */
const UVR_DATA_COMMIT = 'adea29c9fdbd2fa115a208965d00a6f03cdfde96';
const UVR_DATA_CONFIGS = `https://raw.githubusercontent.com/TRvlvr/application_data/${UVR_DATA_COMMIT}/mdx_model_data/mdx_c_configs/`;
const UVR_DATA_HASH = 'computed by stemsplit from TRvlvr/application_data at commit adea29c';
/** UVR's GUI repository, where the MDX23C configs live, pinned to the commit read. */
const UVR_GUI_COMMIT = 'eb1ee99c9678cab64e3cbb87c9431c054cc7e3ec';
const UVR_GUI_CONFIGS = `https://raw.githubusercontent.com/Anjok07/ultimatevocalremovergui/${UVR_GUI_COMMIT}/models/MDX_Net_Models/model_data/mdx_c_configs/`;
/**
 * UVR's README ("License"): the GUI code is MIT; third-party apps that use UVR's models are asked
 * to honour that licence by crediting UVR and its developers. No licence file covers the weights.
 */
const UVR_TERMS = "not stated for the weights; UVR's README asks apps that use its models to credit UVR and its developers (MIT, its code's licence)";
/** Where the catalog's MDX-Net model data comes from (UVR's table, at the commit read). */
export const MDX_MODEL_DATA_SOURCE =
  'https://github.com/TRvlvr/application_data/blob/3826b05b570dbd4fbedbc807758803b35348ba1b/mdx_model_data/model_data_new.json';

/** python-audio-separator's table of median scores (audio_separator/models-scores.json), at the commit read. */
const SEPARATOR_SCORES = "python-audio-separator's median scores (models-scores.json, commit 0a644db)";

/** Well-known public RoFormer checkpoints (Music-Source-Separation-Training format), with the MSST yaml that describes each. */
const ROFORMER_MODELS: readonly CatalogModel[] = [
  {
    name: 'bs-roformer-viperx-1297',
    family: 'msst',
    description: "viperx's BS-RoFormer (ep 317, SDR 12.97 in UVR's table), vocals + no_vocals; the vocal model UVR users reach for",
    terms: UVR_TERMS,
    sources: ['vocals', 'no_vocals'],
    modelType: 'bs_roformer',
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
    terms: HUGGING_FACE_NO_LICENCE('KimberleyJSN/melbandroformer'),
    sources: ['vocals', 'no_vocals'],
    modelType: 'mel_band_roformer',
    files: ['MelBandRoformer.ckpt', 'MelBandRoformer.yaml'],
    downloads: [
      {
        file: 'MelBandRoformer.ckpt',
        url: 'https://huggingface.co/KimberleyJSN/melbandroformer/resolve/main/MelBandRoformer.ckpt',
        sha256: '87201f4d31afb5bc79993230fc49446918425574db48c01c405e44f365c7559e',
        hashSource: "published: the Git LFS SHA-256 on the publisher's Hugging Face page (913,106,900 bytes)",
      },
      {
        file: 'MelBandRoformer.yaml',
        url: `${MSST_CONFIGS}KimberleyJensen/config_vocals_mel_band_roformer_kj.yaml`,
        sha256: 'f63f38eb1e6e40a7db0dade714a5ae257555dd8748f4e774eae8679275a81926',
        hashSource: MSST_CONFIG_HASH,
      },
    ],
  },
  {
    name: 'bs-roformer-viperx-1296',
    family: 'msst',
    description: `viperx's BS-RoFormer (ep 368, SDR 12.96 in UVR's table), vocals + no_vocals; vocals SDR 12.10 in ${SEPARATOR_SCORES}, the best vocal score there`,
    terms: UVR_TERMS,
    sources: ['vocals', 'no_vocals'],
    modelType: 'bs_roformer',
    files: ['model_bs_roformer_ep_368_sdr_12.9628.ckpt', 'model_bs_roformer_ep_368_sdr_12.9628.yaml'],
    downloads: [
      { file: 'model_bs_roformer_ep_368_sdr_12.9628.ckpt', url: `${UVR_MODELS}model_bs_roformer_ep_368_sdr_12.9628.ckpt`, hashSource: NO_HASH },
      {
        file: 'model_bs_roformer_ep_368_sdr_12.9628.yaml',
        url: `${UVR_DATA_CONFIGS}model_bs_roformer_ep_368_sdr_12.9628.yaml`,
        sha256: 'aea599b3f9bd4892a9c6bf5ac7c44787d3c99f717903d16054702665d477c86b',
        hashSource: UVR_DATA_HASH,
      },
    ],
  },
  {
    name: 'mel-roformer-becruily-inst',
    family: 'msst',
    description: `becruily's instrumental Mel-Band RoFormer: instrumental + no_instrumental (the vocals); instrumental SDR 15.36 in ${SEPARATOR_SCORES}`,
    terms: HUGGING_FACE_NO_LICENCE('becruily/mel-band-roformer-instrumental'),
    sources: ['instrumental', 'no_instrumental'],
    modelType: 'mel_band_roformer',
    files: ['mel_band_roformer_instrumental_becruily.ckpt', 'mel_band_roformer_instrumental_becruily.yaml'],
    downloads: [
      {
        file: 'mel_band_roformer_instrumental_becruily.ckpt',
        url: 'https://huggingface.co/becruily/mel-band-roformer-instrumental/resolve/main/mel_band_roformer_instrumental_becruily.ckpt',
        hashSource: NO_HASH,
      },
      {
        file: 'mel_band_roformer_instrumental_becruily.yaml',
        url: 'https://huggingface.co/becruily/mel-band-roformer-instrumental/resolve/main/config_instrumental_becruily.yaml',
        hashSource: NO_HASH,
      },
    ],
  },
  {
    name: 'bs-roformer-zfturbo-4s',
    family: 'msst',
    description: "ZFTurbo's 4-stem BS-RoFormer (MUSDB18 test avg SDR 9.65); can serve the API's 4s",
    terms: MSST_TERMS,
    // In its yaml's order (`instruments: ['drums', 'bass', 'other', 'vocals']`), which the split's files follow.
    sources: ['drums', 'bass', 'other', 'vocals'],
    modelType: 'bs_roformer',
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

/** SCNet (starrytong's architecture) checkpoints, trained and published in MSST's releases. */
const SCNET_MODELS: readonly CatalogModel[] = [
  {
    name: 'scnet-xl-ihf',
    family: 'msst',
    description: "SCNet XL IHF, 4 stems (MUSDB18-HQ test avg SDR 10.08 in MSST's table); the best SCNet in that table",
    terms: MSST_TERMS,
    sources: ['drums', 'bass', 'other', 'vocals'],
    modelType: 'scnet',
    files: ['model_scnet_ep_36_sdr_10.0891.ckpt', 'model_scnet_ep_36_sdr_10.0891.yaml'],
    downloads: [
      { file: 'model_scnet_ep_36_sdr_10.0891.ckpt', url: `${MSST_RELEASES}v1.0.15/model_scnet_ep_36_sdr_10.0891.ckpt`, hashSource: NO_HASH },
      { file: 'model_scnet_ep_36_sdr_10.0891.yaml', url: `${MSST_RELEASES}v1.0.15/config_musdb18_scnet_xl_more_wide_v5.yaml`, hashSource: NO_HASH },
    ],
  },
  {
    name: 'scnet-large',
    family: 'msst',
    description: "starrytong's SCNet-large, 4 stems (MUSDB18-HQ test avg SDR 9.70 in MSST's table); lighter than XL",
    terms: MSST_TERMS,
    sources: ['drums', 'bass', 'other', 'vocals'],
    modelType: 'scnet',
    files: ['SCNet-large_starrytong_fixed.ckpt', 'SCNet-large_starrytong_fixed.yaml'],
    downloads: [
      { file: 'SCNet-large_starrytong_fixed.ckpt', url: `${MSST_RELEASES}v1.0.9/SCNet-large_starrytong_fixed.ckpt`, hashSource: NO_HASH },
      {
        file: 'SCNet-large_starrytong_fixed.yaml',
        url: `${UVR_DATA_CONFIGS}config_musdb18_scnet_large_starrytong.yaml`,
        sha256: 'a80c08dfad00d066bf6216bcd1440716ddb6b751ee9a46a55b17d06f5a12d35e',
        hashSource: UVR_DATA_HASH,
      },
    ],
  },
];

/** MDX23C (ZFTurbo's TFC-TDF v3) checkpoints. */
const MDX23C_MODELS: readonly CatalogModel[] = [
  {
    name: 'mdx23c-instvoc-hq',
    family: 'msst',
    description: "MDX23C-8KFFT-InstVoc_HQ, vocals + instrumental (UVR's MDX23C model, weights by ZFTurbo)",
    terms: UVR_TERMS,
    sources: ['vocals', 'instrumental'],
    modelType: 'mdx23c',
    files: ['MDX23C-8KFFT-InstVoc_HQ.ckpt', 'MDX23C-8KFFT-InstVoc_HQ.yaml'],
    downloads: [
      { file: 'MDX23C-8KFFT-InstVoc_HQ.ckpt', url: `${UVR_MODELS}MDX23C-8KFFT-InstVoc_HQ.ckpt`, hashSource: NO_HASH },
      {
        file: 'MDX23C-8KFFT-InstVoc_HQ.yaml',
        url: `${UVR_GUI_CONFIGS}model_2_stem_full_band_8k.yaml`,
        sha256: '451765e869b78dcb9ca9188a74da31f581b7254ff0e8b532aa76b974148de947',
        hashSource: 'computed by stemsplit from Anjok07/ultimatevocalremovergui at commit eb1ee99',
      },
    ],
  },
  {
    name: 'mdx23c-drumsep',
    family: 'msst',
    description:
      "aufr33 & jarredou's MDX23C DrumSep: a drum stem into kick, snare, toms, hh, ride, crash (DrumSep test SDR kick 14.54, snare 9.79, toms 10.63 in MSST's table)",
    terms: "not stated: the publisher's repository (github.com/jarredou/models, where the release is) has no licence, nor does MSST's table",
    sources: ['kick', 'snare', 'toms', 'hh', 'ride', 'crash'],
    modelType: 'mdx23c',
    files: ['aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.ckpt', 'aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.yaml'],
    downloads: [
      {
        file: 'aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.ckpt',
        url: 'https://github.com/jarredou/models/releases/download/aufr33-jarredou_MDX23C_DrumSep_model_v0.1/aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.ckpt',
        hashSource: NO_HASH,
      },
      {
        // UVR's copy, which its download list pairs with this checkpoint (names capitalised: read lower-cased).
        file: 'aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.yaml',
        url: `${UVR_DATA_CONFIGS}aufr33-jarredou_DrumSep_model_mdx23c_ep_141_sdr_10.8059.yaml`,
        sha256: '440a13f67461b2cdad2bb1cb86c08ff27a8ec53093c4a24d4d7fc2c19cb9f5f5',
        hashSource: UVR_DATA_HASH,
      },
    ],
  },
];

/** Task models users ask for: karaoke (lead vs backing), de-reverb, denoise; all Mel-Band RoFormers. */
const TASK_MODELS: readonly CatalogModel[] = [
  {
    name: 'mel-roformer-karaoke',
    family: 'msst',
    description: "aufr33 & viperx's karaoke Mel-Band RoFormer (SDR 10.20): lead vocals + no_vocals (the instrumental with the backing vocals kept)",
    terms: UVR_TERMS,
    sources: ['vocals', 'no_vocals'],
    modelType: 'mel_band_roformer',
    files: ['mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt', 'mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.yaml'],
    downloads: [
      {
        file: 'mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt',
        url: `${UVR_MODELS}mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.ckpt`,
        hashSource: NO_HASH,
      },
      {
        file: 'mel_band_roformer_karaoke_aufr33_viperx_sdr_10.1956.yaml',
        url: `${UVR_DATA_CONFIGS}config_mel_band_roformer_karaoke.yaml`,
        sha256: '30364842112e18500aca7ff7b1acf235251eb4ee93b377278176b432410eae33',
        hashSource: UVR_DATA_HASH,
      },
    ],
  },
  {
    name: 'mel-roformer-dereverb',
    family: 'msst',
    description: "anvuew's de-reverb Mel-Band RoFormer (SDR 19.17): the dry signal (noreverb) + no_noreverb (the reverb)",
    terms:
      'GPL-3.0, per its Hugging Face card (huggingface.co/anvuew/dereverb_mel_band_roformer, `license: gpl-3.0`, set in the commit that added this checkpoint)',
    sources: ['noreverb', 'no_noreverb'],
    modelType: 'mel_band_roformer',
    files: ['dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt', 'dereverb_mel_band_roformer_anvuew_sdr_19.1729.yaml'],
    downloads: [
      {
        file: 'dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt',
        url: 'https://huggingface.co/anvuew/dereverb_mel_band_roformer/resolve/main/dereverb_mel_band_roformer_anvuew_sdr_19.1729.ckpt',
        hashSource: NO_HASH,
      },
      {
        file: 'dereverb_mel_band_roformer_anvuew_sdr_19.1729.yaml',
        url: 'https://huggingface.co/anvuew/dereverb_mel_band_roformer/resolve/main/dereverb_mel_band_roformer_anvuew.yaml',
        hashSource: NO_HASH,
      },
    ],
  },
  {
    name: 'mel-roformer-denoise',
    family: 'msst',
    description: "aufr33's denoise Mel-Band RoFormer (SDR 27.99): dry + no_dry (the noise)",
    terms: MSST_TERMS,
    sources: ['dry', 'no_dry'],
    modelType: 'mel_band_roformer',
    files: ['denoise_mel_band_roformer_aufr33_sdr_27.9959.ckpt', 'denoise_mel_band_roformer_aufr33_sdr_27.9959.yaml'],
    downloads: [
      {
        file: 'denoise_mel_band_roformer_aufr33_sdr_27.9959.ckpt',
        url: `${MSST_RELEASES}v.1.0.7/denoise_mel_band_roformer_aufr33_sdr_27.9959.ckpt`,
        hashSource: NO_HASH,
      },
      {
        file: 'denoise_mel_band_roformer_aufr33_sdr_27.9959.yaml',
        url: `${MSST_RELEASES}v.1.0.7/model_mel_band_roformer_denoise.yaml`,
        hashSource: NO_HASH,
      },
    ],
  },
];

/** UVR's MDX-Net `.onnx` models, with the model data UVR keeps for each (`mdxModelData`, from MDX_MODEL_DATA_SOURCE). */
const MDX_MODELS: readonly CatalogModel[] = [
  uvrMdxNet({
    name: 'kim-vocal-2',
    description: "Kimberley Jensen's Kim_Vocal_2, vocals + instrumental; UVR's most used MDX-Net vocal model, cheap on a CPU",
    sources: ['vocals', 'instrumental'],
    file: 'Kim_Vocal_2.onnx',
    uvrHash: '970b3f9492014d18fefeedfe4773cb42',
    mdxModelData: { compensate: 1.009, mdx_dim_f_set: 3072, mdx_dim_t_set: 8, mdx_n_fft_scale_set: 7680, primary_stem: 'Vocals' },
  }),
  uvrMdxNet({
    name: 'uvr-mdx-net-inst-hq-4',
    description: "UVR-MDX-NET-Inst_HQ_4, instrumental + vocals; UVR's instrumental model, cheap on a CPU",
    sources: ['instrumental', 'vocals'],
    file: 'UVR-MDX-NET-Inst_HQ_4.onnx',
    uvrHash: '0f2a6bc5b49d87d64728ee40e23bceb1',
    mdxModelData: { compensate: 1.019, mdx_dim_f_set: 2560, mdx_dim_t_set: 8, mdx_n_fft_scale_set: 5120, primary_stem: 'Instrumental' },
  }),
  uvrMdxNet({
    name: 'uvr-mdx-net-voc-ft',
    description: `UVR-MDX-NET-Voc_FT, vocals + instrumental; vocals SDR 10.15 in ${SEPARATOR_SCORES}, cheap on a CPU`,
    sources: ['vocals', 'instrumental'],
    file: 'UVR-MDX-NET-Voc_FT.onnx',
    uvrHash: '77d07b2667ddf05b9e3175941b4454a0',
    mdxModelData: { compensate: 1.021, mdx_dim_f_set: 3072, mdx_dim_t_set: 8, mdx_n_fft_scale_set: 7680, primary_stem: 'Vocals' },
  }),
  uvrMdxNet({
    name: 'uvr-mdx-net-inst-hq-3',
    description: `UVR-MDX-NET-Inst_HQ_3, instrumental + vocals; instrumental SDR 15.42 in ${SEPARATOR_SCORES}, cheap on a CPU`,
    sources: ['instrumental', 'vocals'],
    file: 'UVR-MDX-NET-Inst_HQ_3.onnx',
    uvrHash: '55657dd70583b0fedfba5f67df11d711',
    mdxModelData: { compensate: 1.022, mdx_dim_f_set: 3072, mdx_dim_t_set: 8, mdx_n_fft_scale_set: 6144, primary_stem: 'Instrumental' },
  }),
];

/** A UVR MDX-Net `.onnx` from UVR's repository (UVR's terms), with the model data UVR keeps under its key. */
function uvrMdxNet(
  entry: Pick<CatalogModel, 'name' | 'description' | 'sources'> & { readonly file: string; readonly uvrHash: string; readonly mdxModelData: UvrModelData },
): CatalogModel {
  const { file, ...rest } = entry;
  return { ...rest, family: 'mdx', terms: UVR_TERMS, files: [file], downloads: [{ file, url: `${UVR_MODELS}${file}`, hashSource: NO_HASH }] };
}

/**
 * UVR's VR-architecture task models (`.pth`): karaoke, de-echo/de-reverb, denoise. Their model
 * data is in the VR engine's table under the UVR key, which pull checks.
 */
const VR_MODELS: readonly CatalogModel[] = (
  [
    [
      '5-hp-karaoke-uvr',
      '5_HP-Karaoke-UVR',
      'f6ea8473ff86017b5ebd586ccacf156b',
      ['instrumental', 'vocals'],
      `UVR's 5_HP-Karaoke-UVR (VR 5.0), the instrumental with the backing vocals + the lead vocals; instrumental SDR 12.22 in ${SEPARATOR_SCORES}`,
    ],
    [
      '6-hp-karaoke-uvr',
      '6_HP-Karaoke-UVR',
      '6b5916069a49be3fe29d4397ecfd73fa',
      ['instrumental', 'vocals'],
      `UVR's 6_HP-Karaoke-UVR (VR 5.0), the instrumental with the backing vocals + the lead vocals; instrumental SDR 12.97 in ${SEPARATOR_SCORES}`,
    ],
    [
      'uvr-deecho-dereverb',
      'UVR-DeEcho-DeReverb',
      '0fb9249ffe4ffc38d7b16243f394c0ff',
      ['no_reverb', 'reverb'],
      "FoxJoy's UVR-DeEcho-DeReverb (VR 5.1), the dry signal (no_reverb: echo and reverb taken out) + the reverb",
    ],
    [
      'uvr-de-echo-normal',
      'UVR-De-Echo-Normal',
      'f200a145434efc7dcf0cd093f517ed52',
      ['no_echo', 'echo'],
      "FoxJoy's UVR-De-Echo-Normal (VR 5.1), the signal without its echo (no_echo) + the echo",
    ],
    [
      'uvr-de-echo-aggressive',
      'UVR-De-Echo-Aggressive',
      '6857b2972e1754913aad0c9a1678c753',
      ['no_echo', 'echo'],
      "FoxJoy's UVR-De-Echo-Aggressive (VR 5.1), the signal without its echo (no_echo) + the echo, taken out more deeply than Normal",
    ],
    [
      'uvr-denoise',
      'UVR-DeNoise',
      '44c55d8b5d2e3edea98c2b2bf93071c7',
      ['noise', 'no_noise'],
      "FoxJoy's UVR-DeNoise (VR 5.1), the noise + the denoised signal (no_noise)",
    ],
    [
      'uvr-denoise-lite',
      'UVR-DeNoise-Lite',
      '51ea8c43a6928ed3c10ef5cb2707d57b',
      ['noise', 'no_noise'],
      "FoxJoy's UVR-DeNoise-Lite (VR 5.1, a small network), the noise + the denoised signal (no_noise)",
    ],
  ] as const
).map(([name, file, uvrHash, sources, description]) => uvrVr({ name, description, sources, file: `${file}.pth`, uvrHash }));

/** A UVR VR `.pth` from UVR's repository (UVR's terms), checked by its UVR key at pull. */
function uvrVr(entry: Pick<CatalogModel, 'name' | 'description' | 'sources'> & { readonly file: string; readonly uvrHash: string }): CatalogModel {
  const { file, ...rest } = entry;
  return { ...rest, family: 'vr', terms: UVR_TERMS, files: [file], downloads: [{ file, url: `${UVR_MODELS}${file}`, hashSource: NO_HASH }] };
}

export const MODEL_CATALOG: readonly CatalogModel[] = Object.freeze([
  ...DEMUCS_MODELS,
  ...ROFORMER_MODELS,
  ...SCNET_MODELS,
  ...MDX23C_MODELS,
  ...TASK_MODELS,
  ...MDX_MODELS,
  ...VR_MODELS,
]);

export function catalogModel(name: string): CatalogModel | undefined {
  return MODEL_CATALOG.find((m) => m.name === name);
}
