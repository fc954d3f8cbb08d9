/**
 * A family's own cases for the family contract suite (test/family-contract.test.ts), kept in its folder
 * (`src/<family>/contract-cases.ts`) beside its record: files of its kind that its claim must take, and
 * that no family before it in MODEL_FAMILIES takes first. The suite runs the shared cases over every
 * family in the list and these beside them; a family without a cases file fails it.
 */
import type { FamilyOptions, ModelFamilyRecord } from './family.js';

export interface OwnFile {
  /** The file, under the shared reference fixtures (`../shared/fixtures/…`) or, with `inRepository`, the project's root. */
  readonly path: string;
  readonly inRepository?: boolean;
  /** The file the claim names, where not `path` itself (a folder's manifest). */
  readonly claimedPath?: string;
  /** What the claim must tell of the file's options (an MSST checkpoint's model type). */
  readonly options?: FamilyOptions;
}

export interface FamilyContractCases {
  readonly family: ModelFamilyRecord;
  readonly ownFiles: readonly OwnFile[];
}
