/** Row types of the database (SQLite or PostgreSQL), as Kysely sees them. Timestamps are ISO strings unless named `*Ms`. */
import type { StemFormat } from '../audio/formats.js';
import type { JobErrorCode } from '../errors.js';
import type { Generated } from 'kysely';

export type SplitStatus = 'queued' | 'processing' | 'succeeded' | 'failed';
export type UploadStatus = 'pending' | 'uploading' | 'complete' | 'used';
export type LedgerKind = 'grant' | 'charge' | 'refund';
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';
/** An admin manages people and credits through the API; a member splits with their own credits. */
export type Role = 'admin' | 'member';

export interface AccountTable {
  id: string;
  name: string;
  balance: number;
  webhookSecret: string;
  createdAt: string;
  role: Role;
}

export interface ApiKeyTable {
  id: string;
  accountId: string;
  name: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  keyHash: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
}

export interface LedgerTable {
  id: Generated<number>;
  accountId: string;
  kind: LedgerKind;
  /** Positive for grants and refunds, negative for charges. */
  amount: number;
  splitId: string | null;
  note: string;
  createdAt: string;
}

export interface UploadTable {
  id: string;
  accountId: string;
  apiKeyId: string;
  filename: string;
  contentType: string;
  contentLength: number;
  tokenHash: string;
  status: UploadStatus;
  createdAt: string;
  expiresAtMs: number;
  completedAt: string | null;
}

export interface SplitTable {
  id: string;
  accountId: string;
  apiKeyId: string;
  status: SplitStatus;
  stemModel: string;
  /** The model that ran (or will run), e.g. `htdemucs` or `bundled-4s`. */
  modelName: string;
  filename: string;
  durationSeconds: number;
  creditsUsed: number;
  progress: number;
  /** Path of the source audio, relative to the data dir. */
  sourcePath: string;
  webhookUrl: string | null;
  /** Origin the client used, for the URLs a webhook carries. */
  baseUrl: string;
  /** JSON array of stem names once succeeded. */
  stemNames: string | null;
  /** JSON array of the stems that add up to the mix (separation/mix-set.ts) once succeeded; null for jobs made before it was kept. */
  mixStems: string | null;
  /** The stems' file format: `mp3` (the spec's), `wav` or `flac` (additions). */
  outputFormat: StemFormat;
  errorCode: JobErrorCode | null;
  errorMessage: string | null;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  finishedAtMs: number | null;
  /** Set when the cleanup task removed the stems. */
  purgedAt: string | null;
  /** The worker holding the job while it is unfinished, and until when (it renews the lease while it runs). */
  leaseOwner: string | null;
  leaseExpiresAtMs: number | null;
  /**
   * JSON of the job's choices beyond the model (`JobOptions` in jobs/job-options.ts): an ensemble's
   * algorithm and weights, two stems, the bit depth. Null: none (every job made before they existed).
   */
  jobOptions: string | null;
  /** What ran it: "GPU: <adapter> (<API>)" or "CPU"; null until its worker has loaded the model. */
  device: string | null;
  /** Set when its owner (or an admin) deleted it: its files are gone and the API no longer shows it. */
  deletedAt: string | null;
}

/** A one-time invite: exchanged once, before it expires, for a new key of its account. */
export interface InviteTable {
  id: string;
  accountId: string;
  /** SHA-256 of the invite token, hex; the token itself is never stored. */
  tokenHash: string;
  createdAt: string;
  expiresAtMs: number;
  usedAt: string | null;
  /** The key it was exchanged for. */
  apiKeyId: string | null;
}

export interface IdempotencyTable {
  apiKeyId: string;
  key: string;
  requestHash: string;
  /** Null while the first request is still running. */
  responseStatus: number | null;
  responseBody: string | null;
  createdAtMs: number;
}

export interface WebhookDeliveryTable {
  id: string;
  splitId: string;
  accountId: string;
  url: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAtMs: number;
  lastError: string | null;
  createdAtMs: number;
  deliveredAt: string | null;
}

/** How long a model (or an ensemble, by its `A+B` name) takes on this deployment, summed over its jobs. */
export interface ModelTimingTable {
  modelName: string;
  /** Wall-clock seconds of the separations, summed. */
  processingSeconds: number;
  /** Seconds of audio they split, summed. */
  audioSeconds: number;
  jobs: number;
  updatedAt: string;
}

export interface SettingTable {
  key: string;
  value: string;
}

export interface Database {
  accounts: AccountTable;
  apiKeys: ApiKeyTable;
  ledger: LedgerTable;
  uploads: UploadTable;
  splits: SplitTable;
  idempotencyKeys: IdempotencyTable;
  webhookDeliveries: WebhookDeliveryTable;
  settings: SettingTable;
  modelTimings: ModelTimingTable;
  invites: InviteTable;
}
