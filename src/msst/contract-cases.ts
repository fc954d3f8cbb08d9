/** MSST checkpoints with their yaml beside, as the family contract suite checks them (contract/cases.ts). */
import type { FamilyContractCases } from '../contract/cases.js';
import { msstFamily } from './family.js';

export const contractCases: FamilyContractCases = {
  family: msstFamily,
  ownFiles: [
    { path: 'roformer/bs_roformer_vocals.ckpt', options: { modelType: 'bs_roformer' } },
    { path: 'roformer/mel_band_roformer_vocals.ckpt', options: { modelType: 'mel_band_roformer' } },
    { path: 'msst/scnet_2stem.ckpt', options: { modelType: 'scnet' } },
    { path: 'msst/mdx23c_4stem.ckpt', options: { modelType: 'mdx23c' } },
  ],
};
