/**
 * The composition root of `stemsplit serve`: opens the data dir, builds the services, starts
 * the job runner (unless `--workers 0`), the webhook dispatcher, the cleanup task and the HTTP listener.
 */
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createServer as createHttpsServer } from 'node:https';
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { createApp } from './api/app.js';
import type { AppEnv } from './api/env.js';
import type { StemsplitConfig } from './config.js';
import { StemsplitError } from './errors.js';
import { removeStalePartials, startCleanup } from './jobs/cleanup.js';
import { startJobProcessing } from './jobs/processing.js';
import type { JobRunner } from './jobs/runner.js';
import { SplitService } from './services/splits.js';
import { presentSplit } from './api/present.js';
import { createStemUrlSigner } from './api/stem-urls.js';
import { AccountService } from './services/accounts.js';
import { PeopleService } from './services/people.js';
import { ModelService } from './services/models.js';
import { UploadService } from './services/uploads.js';
import type { WebhookDispatcher } from './jobs/webhooks.js';
import { registryFor, type ModelRegistry } from './models/registry.js';
import { checkServedModels } from './models/served-check.js';
import type { GuardOptions } from './net/fetch.js';
import type { ProcessLock } from './process-lock.js';
import { lockDataDirForServe, makeDataDirPrivate, openDataStore, urlSigningKey, type Clock, type DataStore } from './store/index.js';
import { ALLOWED_CONTENT_TYPES } from './limits.js';
import { VERSION } from './version.js';
import { webRoutes } from './web/routes.js';

export interface ServerOptions {
  /** Replaces the DNS resolver and socket dialer of outbound fetches (tests). */
  readonly guard?: Partial<GuardOptions>;
  readonly clock?: Clock;
  /** Routes mounted at `/`, outside /v1; the web page by default. */
  readonly extraRoutes?: (deps: { data: DataStore; config: StemsplitConfig }) => Hono<AppEnv>;
  readonly log?: (line: string) => void;
  /** Receives the access log; by default `--access-log FILE`, else stdout. */
  readonly accessLog?: (line: string) => void;
  /** Webhook retry delay after n failed attempts (tests shorten it). */
  readonly webhookBackoff?: (attempts: number) => number;
}

export interface RunningServer {
  readonly url: string;
  /** The HTTP app itself, for in-process requests (`app.request`) without a socket. */
  readonly app: Hono<AppEnv>;
  readonly port: number;
  readonly data: DataStore;
  /** Absent on an API-only node (`serve --workers 0`). */
  readonly runner: JobRunner | undefined;
  readonly webhooks: WebhookDispatcher;
  readonly registry: ModelRegistry;
  /** What its jobs run on, in the order a job is offered them ("GPU: … (Vulkan)", "CPU"); none with --workers 0. */
  readonly devices: readonly string[];
  close(): Promise<void>;
}

export async function startServer(config: StemsplitConfig, options: ServerOptions = {}): Promise<RunningServer> {
  if (!config.databaseUrl && config.concurrency === 0) {
    throw new StemsplitError('USAGE', 'serve --workers 0 needs --database-url postgres://…: on SQLite no other process can run the jobs');
  }
  // One serve per SQLite data dir, taken before anything below treats unfinished work in it as
  // interrupted. On PostgreSQL many nodes share the data dir by design, and nothing is reset.
  checkServedModels(registryFor(config), config);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  await makeDataDirPrivate(config.dataDir, log);
  const lock = config.databaseUrl ? undefined : lockDataDirForServe(config.dataDir);
  try {
    return await startLocked(config, options, lock, log);
  } catch (error) {
    lock?.release();
    throw error;
  }
}

async function startLocked(
  config: StemsplitConfig,
  options: ServerOptions,
  lock: ProcessLock | undefined,
  log: (line: string) => void,
): Promise<RunningServer> {
  const data = await openDataStore(config.dataDir, {
    initialCredits: config.initialCredits,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    databaseUrl: config.databaseUrl,
    log,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  try {
    return await startOpen(config, options, data, lock, log);
  } catch (error) {
    await data.close();
    throw error;
  }
}

/** What a crash of the one server left behind: only that server may reset it (SQLite, under the lock). */
async function recoverSoleServer(data: DataStore): Promise<void> {
  await data.uploads.resetInterruptedTransfers();
  await removeStalePartials(data);
  await data.idempotency.dropUnfinished();
  await data.splits.releaseAllLeases();
}

async function startOpen(
  config: StemsplitConfig,
  options: ServerOptions,
  data: DataStore,
  lock: ProcessLock | undefined,
  log: (line: string) => void,
): Promise<RunningServer> {
  if (lock) await recoverSoleServer(data);
  const guard: GuardOptions = { allowPrivate: config.allowPrivateUrls, ...options.guard };
  const registry = registryFor(config);
  const signer = createStemUrlSigner(await urlSigningKey(data.store), config.stemUrlTtlSeconds);
  const jobs = startJobProcessing(data, registry, config, {
    guard,
    log,
    present: (split, nowMs) => presentSplit(split, signer, split.baseUrl, nowMs, split.apiKeyId),
    ...(options.webhookBackoff ? { webhookBackoff: options.webhookBackoff } : {}),
  });
  const models = new ModelService(registry, data.modelTimings, config.servedModels, config.precision, jobs.devices, config.dataDir);
  const accessLog = options.accessLog ? { write: options.accessLog, close: async () => undefined } : await openAccessLog(config.accessLogFile);
  const app = createApp({
    data,
    accounts: new AccountService(data),
    people: new PeopleService(data),
    models,
    uploads: new UploadService(data, config.uploadTtlSeconds),
    splits: new SplitService(data, models, {
      aliasEnsemble: config.ensemble,
      guard,
      maxDownloadBytes: config.maxUploadBytes,
      downloadTimeoutMs: 60_000,
      ...(config.maxMinutes !== undefined ? { maxSeconds: config.maxMinutes * 60 } : {}),
    }),
    signer,
    // A job made here starts here at once when this node runs jobs; otherwise a worker's next poll takes it.
    enqueue: () => jobs.runner?.kick(),
    // A cancel stops its split now when this node runs it (other nodes' runners poll), and sends its webhook.
    cancelled: () => {
      void jobs.runner?.stopCancelled();
      jobs.webhooks.kick();
    },
    rateLimitPerMinute: config.rateLimitPerMinute,
    maxJsonBodyBytes: config.maxJsonBodyBytes,
    limits: serverLimits(config),
    version: VERSION,
    publicUrl: config.publicUrl,
    log,
    accessLog: accessLog.write,
    extraRoutes: options.extraRoutes ? options.extraRoutes({ data, config }) : webRoutes(),
  });

  const server = await listen(app, config.host, config.port, config.tls ? await readTls(config.tls) : undefined).catch(async (error: unknown) => {
    await accessLog.close();
    throw error;
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;

  jobs.start();
  const stopCleanup = startCleanup(data, { stemRetentionSeconds: config.stemRetentionSeconds }, log);

  let closing: Promise<void> | undefined;
  return {
    url: `${config.tls ? 'https' : 'http'}://${host}:${port}`,
    app,
    port,
    data,
    runner: jobs.runner,
    webhooks: jobs.webhooks,
    registry,
    devices: jobs.devices,
    close: () =>
      (closing ??= (async () => {
        stopCleanup();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await jobs.stop();
        await data.close();
        await accessLog.close();
        lock?.release();
      })()),
  };
}

/** What `GET /v1/limits` tells clients (the web page among them) about this server. */
export function serverLimits(config: StemsplitConfig) {
  return {
    maxUploadBytes: config.maxUploadBytes,
    maxSourceSeconds: config.maxMinutes === undefined ? null : config.maxMinutes * 60,
    uploadTtlSeconds: config.uploadTtlSeconds,
    stemUrlTtlSeconds: config.stemUrlTtlSeconds,
    stemRetentionSeconds: config.stemRetentionSeconds,
    contentTypes: [...ALLOWED_CONTENT_TYPES],
  };
}

interface TlsFiles {
  readonly cert: Buffer;
  readonly key: Buffer;
}

/** The PEM files of --tls-cert and --tls-key, read once at start; a missing or unreadable one is named. */
async function readTls(tls: NonNullable<StemsplitConfig['tls']>): Promise<TlsFiles> {
  const read = (path: string, flag: string) =>
    readFile(path).catch((error: NodeJS.ErrnoException) => {
      throw new StemsplitError('IO_ERROR', `${flag} ${path}: ${error.code === 'ENOENT' ? 'no such file' : error.message}`, { cause: error });
    });
  return { cert: await read(tls.certFile, '--tls-cert'), key: await read(tls.keyFile, '--tls-key') };
}

/** Where the access log goes: appended to `--access-log FILE` (0600, like every file of the service), or stdout. */
async function openAccessLog(file: string | undefined): Promise<{ write: (line: string) => void; close: () => Promise<void> }> {
  if (!file) return { write: (line) => process.stdout.write(`${line}\n`), close: async () => undefined };
  const stream = createWriteStream(file, { flags: 'a', mode: 0o600 });
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', (error) => reject(new StemsplitError('IO_ERROR', `--access-log ${file}: ${error.message}`, { cause: error })));
  });
  return {
    write: (line) => void stream.write(`${line}\n`),
    close: () => new Promise<void>((resolve) => stream.end(() => resolve())),
  };
}

function listen(app: Hono<AppEnv>, hostname: string, port: number, tls: TlsFiles | undefined): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    let server: ServerType;
    try {
      const options = { fetch: app.fetch, hostname, port };
      server = serve(tls ? { ...options, createServer: createHttpsServer, serverOptions: { cert: tls.cert, key: tls.key } } : options, () => resolve(server));
    } catch (error) {
      // A certificate and key that do not match, or a file that is not PEM, fails as the server is made.
      reject(new StemsplitError('IO_ERROR', `--tls-cert and --tls-key could not be used: ${(error as Error).message}`, { cause: error }));
      return;
    }
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, hostname, port)));
  });
}

function listenError(error: NodeJS.ErrnoException, hostname: string, port: number): Error {
  const where = `${hostname}:${port}`;
  if (error.code === 'EADDRINUSE') return new StemsplitError('IO_ERROR', `${where} is already in use; choose another with --port`, { cause: error });
  if (error.code === 'EACCES')
    return new StemsplitError('IO_ERROR', `not allowed to listen on ${where}; ports below 1024 need privileges, choose another with --port`, { cause: error });
  if (error.code === 'EADDRNOTAVAIL') return new StemsplitError('IO_ERROR', `${hostname} is not an address of this machine; check --host`, { cause: error });
  return error;
}
