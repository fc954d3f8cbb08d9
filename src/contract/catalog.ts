/** Words the families' catalog rows (`src/<family>/catalog.ts`, CatalogModel in contract/family.ts) share. */
/** A file fetched from its own address (RoFormer checkpoints live on several hosts). */
/** A download's `hashSource` where nobody publishes a hash. */
export const NO_HASH = 'none published: the first pull records the SHA-256 it received';

/** A download's terms where a Hugging Face page states none. */
export const HUGGING_FACE_NO_LICENCE = (repo: string): string => `not stated: the publisher's Hugging Face page (huggingface.co/${repo}) gives no licence`;
