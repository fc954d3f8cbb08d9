/** stemsplit's own model.json models, as the family contract suite checks them (contract/cases.ts). */
import type { FamilyContractCases } from '../contract/cases.js';
import { manifestFamily } from './family.js';

export const contractCases: FamilyContractCases = {
  family: manifestFamily,
  ownFiles: [
    { path: 'models/bundled-4s/model.json', inRepository: true },
    { path: 'models/bundled-6s', inRepository: true, claimedPath: 'models/bundled-6s/model.json' },
  ],
};
