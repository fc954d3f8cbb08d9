/** UVR's MDX-Net `.onnx` models, as the family contract suite checks them (contract/cases.ts). */
import type { FamilyContractCases } from '../contract/cases.js';
import { mdxFamily } from './family.js';

export const contractCases: FamilyContractCases = {
  family: mdxFamily,
  ownFiles: [{ path: 'mdx/mdx_a_nfft6144_vocals.onnx' }, { path: 'mdx/mdx_b_nfft4096_instrumental.onnx' }],
};
