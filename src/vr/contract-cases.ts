/** UVR's VR-architecture `.pth` models, as the family contract suite checks them (contract/cases.ts). */
import type { FamilyContractCases } from '../contract/cases.js';
import { vrFamily } from './family.js';

export const contractCases: FamilyContractCases = {
  family: vrFamily,
  ownFiles: [{ path: 'vr/vr_a_v50_1band_inst.pth' }],
};
