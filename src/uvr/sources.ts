/**
 * Where UVR's files and facts come from, pinned to the commits read: its public model repository,
 * its application data and GUI (model configs), its terms, and python-audio-separator's scores.
 * The MDX-Net, VR and MSST catalogs (each family's catalog.ts) cite them.
 */
import { NO_HASH } from '../contract/catalog.js';
import type { CatalogModel } from '../contract/family.js';

/** UVR's public model repository (the files UVR and python-audio-separator download). */
export const UVR_MODELS = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models/';
/** UVR's application data (model configs), pinned to the commit read. */
export const UVR_DATA_COMMIT = 'adea29c9fdbd2fa115a208965d00a6f03cdfde96';
export const UVR_DATA_CONFIGS = `https://raw.githubusercontent.com/TRvlvr/application_data/${UVR_DATA_COMMIT}/mdx_model_data/mdx_c_configs/`;
export const UVR_DATA_HASH = 'computed by stemsplit from TRvlvr/application_data at commit adea29c';
/** UVR's GUI repository, where the MDX23C configs live, pinned to the commit read. */
export const UVR_GUI_COMMIT = 'eb1ee99c9678cab64e3cbb87c9431c054cc7e3ec';
export const UVR_GUI_CONFIGS = `https://raw.githubusercontent.com/Anjok07/ultimatevocalremovergui/${UVR_GUI_COMMIT}/models/MDX_Net_Models/model_data/mdx_c_configs/`;
/**
 * UVR's README ("License"): the GUI code is MIT; third-party apps that use UVR's models are asked
 * to honour that licence by crediting UVR and its developers. No licence file covers the weights.
 */
export const UVR_TERMS = "not stated for the weights; UVR's README asks apps that use its models to credit UVR and its developers (MIT, its code's licence)";
/** python-audio-separator's table of median scores (audio_separator/models-scores.json), at the commit read. */
export const SEPARATOR_SCORES = "python-audio-separator's median scores (models-scores.json, commit 0a644db)";

/** A catalog row's one file from UVR's model repository: UVR's terms, its address, no published hash (the first pull records it). */
export function uvrRepositoryFile(file: string): Pick<CatalogModel, 'terms' | 'files' | 'downloads'> {
  return { terms: UVR_TERMS, files: [file], downloads: [{ file, url: `${UVR_MODELS}${file}`, hashSource: NO_HASH }] };
}
