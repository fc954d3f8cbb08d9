/**
 * The models `models pull` knows how to fetch: every family's catalog rows (each record's `catalog`,
 * kept in its folder: src/<family>/catalog.ts), joined in the families' order. Stem names are
 * lower-case. docs/models.md lists them all, with where each file and hash comes from;
 * scripts/catalog-check.ts compares them with the publishers' own lists.
 */
import type { CatalogModel } from '../contract/family.js';
import { MODEL_FAMILIES } from './families.js';

export type { CatalogDownload, CatalogModel } from '../contract/family.js';

export const MODEL_CATALOG: readonly CatalogModel[] = Object.freeze(MODEL_FAMILIES.flatMap((family) => family.catalog ?? []));

export function catalogModel(name: string): CatalogModel | undefined {
  return MODEL_CATALOG.find((m) => m.name === name);
}
