/**
 * Flags, environment and defaults resolved once into a frozen config.
 * Every command builds one of these. Nothing else reads process.env, except where the
 * variable is not configuration but plumbing below the config's reach:
 * - audio/ffmpeg.ts: `STEMSPLIT_FFMPEG`, `PATH` and the executable's unpacked ffmpeg, read
 *   wherever ffmpeg is spawned (worker processes included);
 * - split-worker/worker-pool.ts: `STEMSPLIT_SPLIT_WORKER`, the executable's worker script;
 * - sea/*: the executable's runtime paths, set before any config exists;
 * - onnx/session.ts: sets `ORT_DISABLE_TELEMETRY` for the native runtime;
 * - cli/main.ts: `STEMSPLIT_DEBUG`, whether a crash prints its stack.
 */
import { DEFAULT_ALIAS_MODELS, type StemModelAlias } from './models/aliases.js';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import envPaths from 'env-paths';
import { parseEnsembleMethod, type EnsembleMethod } from './ensemble/algorithms.js';
import { StemsplitError } from './errors.js';
import { MAX_JSON_BODY_BYTES, MAX_UPLOAD_BYTES, MIB } from './limits.js';
import { DEFAULT_PRECISION, parsePrecision, type Precision } from './onnx/quantize.js';
import { DEFAULT_DEVICE, parseDeviceChoice, type DeviceChoice } from './devices/index.js';

/**
 * The environment variable of each setting, read here and named by the CLI's flags (a flag
 * given wins over its variable).
 */
export const ENV = Object.freeze({
  dataDir: 'STEMSPLIT_DATA_DIR',
  databaseUrl: 'STEMSPLIT_DATABASE_URL',
  cacheDir: 'STEMSPLIT_CACHE_DIR',
  host: 'STEMSPLIT_HOST',
  port: 'STEMSPLIT_PORT',
  publicUrl: 'STEMSPLIT_PUBLIC_URL',
  tlsCert: 'STEMSPLIT_TLS_CERT',
  tlsKey: 'STEMSPLIT_TLS_KEY',
  accessLog: 'STEMSPLIT_ACCESS_LOG',
  /** serve's `--workers`, which may be 0 (an API-only node). */
  workers: 'STEMSPLIT_WORKERS',
  concurrency: 'STEMSPLIT_CONCURRENCY',
  rateLimit: 'STEMSPLIT_RATE_LIMIT',
  allowPrivateUrls: 'STEMSPLIT_ALLOW_PRIVATE_URLS',
  uploadTtl: 'STEMSPLIT_UPLOAD_TTL',
  stemUrlTtl: 'STEMSPLIT_STEM_URL_TTL',
  stemRetention: 'STEMSPLIT_STEM_RETENTION',
  initialCredits: 'STEMSPLIT_INITIAL_CREDITS',
  maxUploadMb: 'STEMSPLIT_MAX_UPLOAD_MB',
  maxMinutes: 'STEMSPLIT_MAX_MINUTES',
  model4s: 'STEMSPLIT_MODEL_4S',
  model6s: 'STEMSPLIT_MODEL_6S',
  /** serve's `--models`: the models API keys may name (all installed ones when unset). */
  servedModels: 'STEMSPLIT_MODELS',
  modelsDir: 'STEMSPLIT_MODELS_DIR',
  precision: 'STEMSPLIT_PRECISION',
  device: 'STEMSPLIT_DEVICE',
  gpuWorkers: 'STEMSPLIT_GPU_WORKERS',
  jobLeaseSeconds: 'STEMSPLIT_JOB_LEASE_SECONDS',
  modelsBaseUrl: 'STEMSPLIT_MODELS_BASE_URL',
});

/** The defaults of the settings the CLI shows in its help, beside those only config knows. */
export const DEFAULTS = Object.freeze({
  host: '127.0.0.1',
  port: 8787,
  concurrency: 1,
  rateLimitPerMinute: 60,
});

export interface StemsplitConfig {
  /** SQLite database, uploads, sources and stems live here (with PostgreSQL: all but the database, on a folder every node mounts at this path). */
  readonly dataDir: string;
  /** `postgres://…`: the database several nodes share. Unset: SQLite in the data dir. */
  readonly databaseUrl: string | undefined;
  /** Downloaded and converted models live here (safe to delete). */
  readonly cacheDir: string;
  readonly host: string;
  readonly port: number;
  /**
   * The address clients reach the server at, when that is not where it listens (a reverse proxy,
   * TLS, a path prefix): every URL the API hands out starts with it. Unset: the request's origin.
   */
  readonly publicUrl: string | undefined;
  /** serve --tls-cert and --tls-key: PEM files; set, the server speaks HTTPS only. */
  readonly tls: { readonly certFile: string; readonly keyFile: string } | undefined;
  /** serve --access-log: the file the access log is appended to; unset, stdout. */
  readonly accessLogFile: string | undefined;
  /** Split jobs this process runs at once (0: none, an API-only node); each one's model uses all cores / concurrency threads. */
  readonly concurrency: number;
  /** Requests per API key per minute to POST /v1/audio/splits. */
  readonly rateLimitPerMinute: number;
  /** Lets direct_url and webhook targets be loopback or private addresses (trusted LAN only). */
  readonly allowPrivateUrls: boolean;
  readonly uploadTtlSeconds: number;
  readonly stemUrlTtlSeconds: number;
  readonly stemRetentionSeconds: number;
  readonly idempotencyTtlSeconds: number;
  /** Seconds of credit granted to the `default` account when a data dir is created. */
  readonly initialCredits: number;
  /** Where the JSON body of an API request may not go beyond. */
  readonly maxJsonBodyBytes: number;
  /**
   * The largest upload (and `direct_url` download) a split takes. The spec's 50 MiB by default,
   * so hosted-service clients meet the same contract; an operator raises it with --max-upload-mb.
   */
  readonly maxUploadBytes: number;
  /** Model names the API's `4s` and `6s` resolve to, first installed wins; `A+B` is an ensemble of A and B. */
  readonly modelAliases: Readonly<Record<StemModelAlias, readonly string[]>>;
  /** How the ensembles among `modelAliases` combine their stems (serve/worker --ensemble, --ensemble-weights); unset: avg_wave, equal weights. */
  readonly ensemble: EnsembleMethod | undefined;
  /** The models a job may name through the API (serve --models); undefined: every installed model. The aliases' models are always allowed. */
  readonly servedModels: readonly string[] | undefined;
  /** Folder holding the models shipped with stemsplit. */
  readonly bundledModelsDir: string;
  /** Threads one ONNX session may use. */
  readonly intraOpThreads: number;
  /** What models compute in: `fp32`, or `int8` matrix products and convolutions (opt-in, docs/benchmarks.md). */
  readonly precision: Precision;
  /** Where splits run: `auto` (a hardware GPU when there is one, else the CPU), `cpu` or `gpu` (devices/index.ts). */
  readonly device: DeviceChoice;
  /** Split jobs a GPU runs at once, beside the CPU's `concurrency` (GPU memory is the limit). */
  readonly gpuWorkers: number;
  /**
   * The longest audio a split job accepts, when the operator sets one. Unset by default: a split
   * streams its audio (memory does not grow with length) and checks for disk room itself.
   */
  readonly maxMinutes: number | undefined;
  /**
   * How long a job stays with a worker that stopped renewing its claim (it died, or lost the
   * database) before another worker takes it over.
   */
  readonly jobLeaseSeconds: number;
}

export interface ConfigInput {
  dataDir?: string | undefined;
  databaseUrl?: string | undefined;
  cacheDir?: string | undefined;
  host?: string | undefined;
  port?: number | undefined;
  publicUrl?: string | undefined;
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
  accessLog?: string | undefined;
  concurrency?: number | undefined;
  rateLimitPerMinute?: number | undefined;
  allowPrivateUrls?: boolean | undefined;
  uploadTtlSeconds?: number | undefined;
  stemUrlTtlSeconds?: number | undefined;
  stemRetentionSeconds?: number | undefined;
  initialCredits?: number | undefined;
  modelAliases?: Partial<Record<StemModelAlias, readonly string[]>> | undefined;
  /** --ensemble and --ensemble-weights as given, checked against each ensemble of `modelAliases`. */
  ensemble?: string | undefined;
  ensembleWeights?: string | undefined;
  servedModels?: readonly string[] | undefined;
  bundledModelsDir?: string | undefined;
  maxMinutes?: number | undefined;
  /** --max-upload-mb: MiB, as the spec's 50 MB limit counts them (52,428,800 bytes). */
  maxUploadMb?: number | undefined;
  jobLeaseSeconds?: number | undefined;
  precision?: Precision | undefined;
  device?: DeviceChoice | undefined;
  gpuWorkers?: number | undefined;
}

const HOUR = 3600;
const DAY = 24 * HOUR;

/** The models folder of this package: `<root>/models`, beside `src/` and `dist/`. */
export function packageModelsDir(): string {
  return resolve(new URL('../models', import.meta.url).pathname);
}

function envNumber(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const value = Number(raw);
  if (!Number.isFinite(value)) throw new Error(`${name} must be a number, got "${raw}"`);
  return value;
}

/**
 * `a+b` → `['a', 'b']`: the models an entry of a model list joins into an ensemble (a plain
 * name is an entry of one). Every side of a `+` names a model.
 */
export function ensembleMembers(entry: string): string[] {
  const members = entry.split('+').map((part) => part.trim());
  if (members.some((member) => member === '')) throw new StemsplitError('USAGE', `"${entry}": a + joins model names, and each side needs one`);
  return members;
}

/**
 * `htdemucs+bs-roformer-viperx-1297, bundled-4s` → its entries: the models an alias tries, the
 * first whose models are all installed wins (`,` lists fallbacks, `+` joins an ensemble).
 */
export function modelList(value: string, name: string): string[] {
  const entries = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (entries.length === 0) throw new StemsplitError('USAGE', `${name} needs comma-separated model names, got "${value}"`);
  for (const entry of entries) ensembleMembers(entry);
  return entries;
}

/**
 * How the aliases' ensembles combine: --ensemble and --ensemble-weights checked as split checks
 * them, against every `A+B` entry (weights: one per member of each). Given with no ensemble
 * among the entries, they would change nothing, so they are refused.
 */
function aliasEnsembleMethod(entries: readonly string[], algorithm: string | undefined, weights: string | undefined): EnsembleMethod | undefined {
  if (algorithm === undefined && weights === undefined) return undefined;
  const sizes = entries.map((entry) => ensembleMembers(entry).length).filter((size) => size > 1);
  if (sizes.length === 0) {
    throw new StemsplitError(
      'USAGE',
      '--ensemble and --ensemble-weights combine an ensemble: join models with + in --model-4s or --model-6s (e.g. htdemucs+bs-roformer-viperx-1297)',
    );
  }
  const methods = sizes.map((size) => parseEnsembleMethod(algorithm, weights, size));
  return methods[0];
}

function envPrecision(env: NodeJS.ProcessEnv): Precision {
  const raw = env[ENV.precision];
  return raw ? parsePrecision(raw, ENV.precision) : DEFAULT_PRECISION;
}

function envList(env: NodeJS.ProcessEnv, name: string): string[] | undefined {
  const raw = env[name];
  return raw ? modelList(raw, name) : undefined;
}

/**
 * `https://studio.example/stemsplit/` → `https://studio.example/stemsplit`: an http(s) URL with
 * no credentials, query or fragment, without its trailing slash, so paths append to it.
 */
export function parsePublicUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StemsplitError('USAGE', `--public-url must be an absolute http(s) URL, got "${raw}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new StemsplitError('USAGE', `--public-url must be http or https, got "${raw}"`);
  if (url.username || url.password || url.search || url.hash) {
    throw new StemsplitError('USAGE', `--public-url takes no credentials, query or fragment, got "${raw}"`);
  }
  return url.href.replace(/\/+$/, '');
}

/** A PostgreSQL URL as `pg` takes it; anything else is refused before a connection is tried. */
export function parseDatabaseUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new StemsplitError('USAGE', '--database-url must be a URL like postgres://user:password@host:5432/stemsplit');
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new StemsplitError('USAGE', `--database-url must start with postgres:// (SQLite needs no URL: it lives in the data dir), got ${url.protocol}//…`);
  }
  return raw;
}

function parsedDatabaseUrl(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : parseDatabaseUrl(raw);
}

function parsedPublicUrl(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : parsePublicUrl(raw);
}

function nonEmpty(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : resolve(raw);
}

/** serve --tls-cert and --tls-key go together: a certificate without its key (or the reverse) is a mistake, not plain HTTP. */
function tlsFiles(cert: string | undefined, key: string | undefined): StemsplitConfig['tls'] {
  const certFile = nonEmpty(cert);
  const keyFile = nonEmpty(key);
  if (!certFile && !keyFile) return undefined;
  if (!certFile || !keyFile) {
    throw new StemsplitError('USAGE', `--tls-cert (${ENV.tlsCert}) and --tls-key (${ENV.tlsKey}) go together: give both PEM files, or neither for plain HTTP`);
  }
  return Object.freeze({ certFile, keyFile });
}

/** serve --models: plain model names (an ensemble is made per job from allowed models). */
function servedModels(names: readonly string[] | undefined): readonly string[] | undefined {
  if (names === undefined) return undefined;
  for (const name of names) {
    if (ensembleMembers(name).length > 1)
      throw new StemsplitError(
        'USAGE',
        `--models (${ENV.servedModels}) lists single models; "${name}" joins several (jobs make their own ensembles from allowed models)`,
      );
  }
  return Object.freeze([...names]);
}

function gpuWorkers(count: number | undefined): number {
  if (count === undefined) return 1;
  if (!Number.isInteger(count) || count < 0 || count > 64)
    throw new StemsplitError('USAGE', `--gpu-workers (${ENV.gpuWorkers}) must be a whole number from 0 to 64, got ${count}`);
  return count;
}

/** The largest upload --max-upload-mb may set: 1 TiB, far beyond any song, still a safe integer of bytes. */
export const MAX_UPLOAD_MB_LIMIT = 1024 * 1024;

function uploadBytes(mb: number | undefined): number {
  if (mb === undefined) return MAX_UPLOAD_BYTES;
  if (!Number.isInteger(mb) || mb < 1 || mb > MAX_UPLOAD_MB_LIMIT) {
    throw new StemsplitError('USAGE', `--max-upload-mb (${ENV.maxUploadMb}) must be a whole number of MB from 1 to ${MAX_UPLOAD_MB_LIMIT}, got ${mb}`);
  }
  return mb * MIB;
}

export function resolveConfig(input: ConfigInput = {}, env: NodeJS.ProcessEnv = process.env): StemsplitConfig {
  const paths = envPaths('stemsplit', { suffix: '' });
  const explicitDataDir = input.dataDir ?? env[ENV.dataDir];
  const dataDir = resolve(explicitDataDir ?? paths.data);
  // A data dir chosen by hand keeps its cache beside it, so one folder holds everything.
  const cacheDir = resolve(input.cacheDir ?? env[ENV.cacheDir] ?? (explicitDataDir ? join(dataDir, 'cache') : paths.cache));
  const cores = availableParallelism();
  const concurrency = input.concurrency ?? envNumber(env, ENV.concurrency) ?? DEFAULTS.concurrency;
  const aliases4 = input.modelAliases?.['4s'] ?? envList(env, ENV.model4s) ?? DEFAULT_ALIAS_MODELS['4s'];
  const aliases6 = input.modelAliases?.['6s'] ?? envList(env, ENV.model6s) ?? DEFAULT_ALIAS_MODELS['6s'];
  for (const entry of [...aliases4, ...aliases6]) ensembleMembers(entry);
  return Object.freeze({
    dataDir,
    databaseUrl: parsedDatabaseUrl(input.databaseUrl ?? env[ENV.databaseUrl]),
    cacheDir,
    host: input.host ?? env[ENV.host] ?? DEFAULTS.host,
    port: input.port ?? envNumber(env, ENV.port) ?? DEFAULTS.port,
    publicUrl: parsedPublicUrl(input.publicUrl ?? env[ENV.publicUrl]),
    tls: tlsFiles(input.tlsCert ?? env[ENV.tlsCert], input.tlsKey ?? env[ENV.tlsKey]),
    accessLogFile: nonEmpty(input.accessLog ?? env[ENV.accessLog]),
    concurrency,
    rateLimitPerMinute: input.rateLimitPerMinute ?? envNumber(env, ENV.rateLimit) ?? DEFAULTS.rateLimitPerMinute,
    allowPrivateUrls: input.allowPrivateUrls ?? env[ENV.allowPrivateUrls] === '1',
    uploadTtlSeconds: input.uploadTtlSeconds ?? envNumber(env, ENV.uploadTtl) ?? HOUR,
    stemUrlTtlSeconds: input.stemUrlTtlSeconds ?? envNumber(env, ENV.stemUrlTtl) ?? DAY,
    stemRetentionSeconds: input.stemRetentionSeconds ?? envNumber(env, ENV.stemRetention) ?? 7 * DAY,
    idempotencyTtlSeconds: DAY,
    initialCredits: input.initialCredits ?? envNumber(env, ENV.initialCredits) ?? HOUR,
    maxJsonBodyBytes: MAX_JSON_BODY_BYTES,
    maxUploadBytes: uploadBytes(input.maxUploadMb ?? envNumber(env, ENV.maxUploadMb)),
    modelAliases: Object.freeze({ '4s': Object.freeze([...aliases4]), '6s': Object.freeze([...aliases6]) }),
    ensemble: aliasEnsembleMethod([...aliases4, ...aliases6], input.ensemble, input.ensembleWeights),
    servedModels: servedModels(input.servedModels ?? envList(env, ENV.servedModels)),
    bundledModelsDir: resolve(input.bundledModelsDir ?? env[ENV.modelsDir] ?? packageModelsDir()),
    intraOpThreads: Math.max(1, Math.floor(cores / Math.max(1, concurrency))),
    precision: input.precision ?? envPrecision(env),
    device: input.device ?? (env[ENV.device] ? parseDeviceChoice(env[ENV.device] as string, ENV.device) : DEFAULT_DEVICE),
    gpuWorkers: gpuWorkers(input.gpuWorkers ?? envNumber(env, ENV.gpuWorkers)),
    maxMinutes: input.maxMinutes ?? envNumber(env, ENV.maxMinutes),
    jobLeaseSeconds: Math.max(1, input.jobLeaseSeconds ?? envNumber(env, ENV.jobLeaseSeconds) ?? 30),
  });
}
