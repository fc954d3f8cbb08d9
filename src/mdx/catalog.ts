/**
 * UVR's most used MDX-Net `.onnx` models, with the model data UVR keeps for each: `models pull`
 * writes it as `NAME.json` beside the file.
 */
import type { CatalogModel } from '../contract/family.js';
import { SEPARATOR_SCORES, uvrRepositoryFile } from '../uvr/sources.js';
import type { UvrModelData } from './model-data.js';

export interface MdxCatalogModel extends CatalogModel {
  /**
   * The model data UVR keeps for this file (its keys, as in UVR's model_data_new.json), written as
   * `NAME.json` beside the `.onnx` at pull, so the model runs whether or not the engine's built-in
   * table knows it.
   */
  readonly mdxModelData?: UvrModelData;
  /** The key of that data in UVR's table (MD5 of the file's last 10,240,000 bytes); pull checks it. */
  readonly uvrHash?: string;
}

/** Where the catalog's MDX-Net model data comes from (UVR's table, at the commit read). */
export const MDX_MODEL_DATA_SOURCE =
  'https://github.com/TRvlvr/application_data/blob/3826b05b570dbd4fbedbc807758803b35348ba1b/mdx_model_data/model_data_new.json';

/** UVR's MDX-Net `.onnx` models, with the model data UVR keeps for each (`mdxModelData`, from MDX_MODEL_DATA_SOURCE). */
export const MDX_CATALOG: readonly MdxCatalogModel[] = [
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
  entry: Pick<MdxCatalogModel, 'name' | 'description' | 'sources'> & { readonly file: string; readonly uvrHash: string; readonly mdxModelData: UvrModelData },
): MdxCatalogModel {
  const { file, ...rest } = entry;
  return { ...rest, family: 'mdx', ...uvrRepositoryFile(file) };
}
