/** Demucs checkpoints and bags, as the family contract suite checks them (contract/cases.ts). */
import type { FamilyContractCases } from '../contract/cases.js';
import { demucsFamily } from './family.js';

export const contractCases: FamilyContractCases = {
  family: demucsFamily,
  ownFiles: [
    { path: 'demucs/htdemucs_small.th' },
    { path: 'demucs/htdemucs_ft_small.yaml' },
    { path: 'demucs-v3/mdx_small.yaml' },
    { path: 'demucs-v3/mdx_m0.th' },
  ],
};
