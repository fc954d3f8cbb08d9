/**
 * The most used MSST checkpoints (BS/Mel-Band RoFormer, SCNet, MDX23C, and task models) with the yaml
 * that describes each. Terms follow one rule: what the weights' publisher states and where; "not
 * stated" only where the publisher's page states nothing, naming that page.
 */
import { HUGGING_FACE_NO_LICENCE, NO_HASH } from '../contract/catalog.js';
import type { CatalogModel } from '../contract/family.js';
import { SEPARATOR_SCORES, UVR_DATA_CONFIGS, UVR_DATA_HASH, UVR_GUI_CONFIGS, UVR_MODELS, UVR_TERMS } from '../uvr/sources.js';
import type { MsstModelType } from './model-types.js';

/** An MSST checkpoint: its model type where the yaml alone does not tell it (`--model_type`). */
export interface MsstCatalogModel extends CatalogModel {
  readonly options?: { readonly modelType: MsstModelType };
}

/** MSST's configs, pinned to the commit the engine was checked against (github.com/ZFTurbo/Music-Source-Separation-Training). */
const MSST_CONFIGS = 'https://raw.githubusercontent.com/ZFTurbo/Music-Source-Separation-Training/ccc011abf7f89dd7922bb2888d48493b575c0289/configs/';
const MSST_CONFIG_HASH = 'computed by stemsplit from MSST at commit ccc011a';
/**
 * The terms rule, for every entry: what the weights' publisher states and where; "not stated"
 * only where the publisher's page states nothing, naming that page.
 */
const MSST_TERMS = "not stated for the weights: MSST's pretrained-models table gives no licence (the repository's MIT licence covers its code)";

/** MSST's release assets (github.com/ZFTurbo/Music-Source-Separation-Training/releases), as its pretrained-models table links them. */
const MSST_RELEASES = 'https://github.com/ZFTurbo/Music-Source-Separation-Training/releases/download/';

/** Well-known public RoFormer checkpoints (Music-Source-Separation-Training format), with the MSST yaml that describes each. */
const ROFORMER_MODELS: readonly MsstCatalogModel[] = [
  {
    name: 'bs-roformer-viperx-1297',
    family: 'msst',
    description: "viperx's BS-RoFormer (ep 317, SDR 12.97 in UVR's table), vocals + no_vocals; the vocal model UVR users reach for",
    terms: UVR_TERMS,
    sources: ['vocals', 'no_vocals'],
    options: { modelType: 'bs_roformer' },
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
    options: { modelType: 'mel_band_roformer' },
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
    options: { modelType: 'bs_roformer' },
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
    options: { modelType: 'mel_band_roformer' },
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
    options: { modelType: 'bs_roformer' },
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
const SCNET_MODELS: readonly MsstCatalogModel[] = [
  {
    name: 'scnet-xl-ihf',
    family: 'msst',
    description: "SCNet XL IHF, 4 stems (MUSDB18-HQ test avg SDR 10.08 in MSST's table); the best SCNet in that table",
    terms: MSST_TERMS,
    sources: ['drums', 'bass', 'other', 'vocals'],
    options: { modelType: 'scnet' },
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
    options: { modelType: 'scnet' },
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
const MDX23C_MODELS: readonly MsstCatalogModel[] = [
  {
    name: 'mdx23c-instvoc-hq',
    family: 'msst',
    description: "MDX23C-8KFFT-InstVoc_HQ, vocals + instrumental (UVR's MDX23C model, weights by ZFTurbo)",
    terms: UVR_TERMS,
    sources: ['vocals', 'instrumental'],
    options: { modelType: 'mdx23c' },
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
    options: { modelType: 'mdx23c' },
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
const TASK_MODELS: readonly MsstCatalogModel[] = [
  {
    name: 'mel-roformer-karaoke',
    family: 'msst',
    description: "aufr33 & viperx's karaoke Mel-Band RoFormer (SDR 10.20): lead vocals + no_vocals (the instrumental with the backing vocals kept)",
    terms: UVR_TERMS,
    sources: ['vocals', 'no_vocals'],
    options: { modelType: 'mel_band_roformer' },
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
    options: { modelType: 'mel_band_roformer' },
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
    options: { modelType: 'mel_band_roformer' },
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

export const MSST_CATALOG: readonly MsstCatalogModel[] = [...ROFORMER_MODELS, ...SCNET_MODELS, ...MDX23C_MODELS, ...TASK_MODELS];
