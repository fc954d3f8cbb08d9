/**
 * The composition root of `stemsplit serve`: opens the data dir, builds the services, starts
 * the worker pool, the webhook dispatcher, the cleanup task and the HTTP listener.
 */
import { serve, type ServerType } from '@hono/node-server';
import type { Hono } from 'hono';
import { createApp } from './api/app.js';
import type { AppEnv } from './api/env.js';
import type { StemsplitConfig } from './config.js';
import { StemsplitError } from './errors.js';
import { removeStalePartials, startCleanup } from './jobs/cleanup.js';
import { JobRunner } from './jobs/runner.js';
import { workerSplitter } from './splitting/worker-pool.js';
import { SplitService } from './services/splits.js';
import { presentSplit } from './api/present.js';
import { createStemUrlSigner } from './api/stem-urls.js';
import { AccountService } from './services/accounts.js';
import { ModelService } from './services/models.js';
import { UploadService } from './services/uploads.js';
import { WebhookDispatcher } from './jobs/webhooks.js';
import { registryFor, type ModelRegistry } from './models/registry.js';
import type { GuardOptions } from './net/fetch.js';
import type { ProcessLock } from './process-lock.js';
import { lockDataDirForServe, openDataStore, urlSigningKey, type Clock, type DataStore } from './store/index.js';
import { MAX_UPLOAD_BYTES } from './limits.js';
import { VERSION } from './version.js';
import { webRoutes } from './web/routes.js';

export interface ServerOptions {
  /** Replaces the DNS resolver and socket dialer of outbound fetches (tests). */
  readonly guard?: Partial<GuardOptions>;
  readonly clock?: Clock;
  /** Routes mounted at `/`, outside /v1; the web page by default. */
  readonly extraRoutes?: (deps: { data: DataStore; config: StemsplitConfig }) => Hono<AppEnv>;
  readonly log?: (line: string) => void;
  /** Webhook retry delay after n failed attempts (tests shorten it). */
  readonly webhookBackoff?: (attempts: number) => number;
}

export interface RunningServer {
  readonly url: string;
  /** The HTTP app itself, for in-process requests (`app.request`) without a socket. */
  readonly app: Hono<AppEnv>;
  readonly port: number;
  readonly data: DataStore;
  readonly runner: JobRunner;
  readonly webhooks: WebhookDispatcher;
  readonly registry: ModelRegistry;
  close(): Promise<void>;
}

export async function startServer(config: StemsplitConfig, options: ServerOptions = {}): Promise<RunningServer> {
  // Before anything below treats unfinished work in the data dir as interrupted.
  const lock = lockDataDirForServe(config.dataDir);
  try {
    return await startLocked(config, options, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

async function startLocked(config: StemsplitConfig, options: ServerOptions, lock: ProcessLock): Promise<RunningServer> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const data = await openDataStore(config.dataDir, {
    initialCredits: config.initialCredits,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  data.uploads.resetInterruptedTransfers();
  await removeStalePartials(data);
  data.idempotency.dropUnfinished();

  const guard: GuardOptions = { allowPrivate: config.allowPrivateUrls, ...options.guard };
  const registry = registryFor(config);
  const splitter = workerSplitter({ cacheDir: config.cacheDir, intraOpThreads: config.intraOpThreads }, config.concurrency);
  const signer = createStemUrlSigner(urlSigningKey(data.store), config.stemUrlTtlSeconds);
  const webhooks = new WebhookDispatcher(data, { guard, log, ...(options.webhookBackoff ? { backoff: options.webhookBackoff } : {}) });
  const runner = new JobRunner(data, registry, splitter, (split, nowMs) => presentSplit(split, signer, split.baseUrl, nowMs), {
    concurrency: config.concurrency,
    log,
    onTerminal: () => webhooks.kick(),
  });
  const app = createApp({
    data,
    accounts: new AccountService(data),
    models: new ModelService(registry),
    uploads: new UploadService(data, config.uploadTtlSeconds),
    splits: new SplitService(data, registry, { guard, maxDownloadBytes: MAX_UPLOAD_BYTES, downloadTimeoutMs: 60_000, ...(config.maxMinutes !== undefined ? { maxSeconds: config.maxMinutes * 60 } : {}) }),
    signer,
    enqueue: (id) => runner.enqueue(id),
    rateLimitPerMinute: config.rateLimitPerMinute,
    maxJsonBodyBytes: config.maxJsonBodyBytes,
    version: VERSION,
    publicUrl: config.publicUrl,
    log,
    extraRoutes: options.extraRoutes ? options.extraRoutes({ data, config }) : webRoutes(),
  });

  const server = await listen(app, config.host, config.port).catch((error: unknown) => {
    data.close();
    throw error;
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;

  webhooks.start();
  runner.resumeUnfinished();
  const stopCleanup = startCleanup(data, { stemRetentionSeconds: config.stemRetentionSeconds }, log);

  let closing: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    app,
    port,
    data,
    runner,
    webhooks,
    registry,
    close: () =>
      (closing ??= (async () => {
        stopCleanup();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await runner.stop();
        await webhooks.stop();
        await splitter.close();
        data.close();
        lock.release();
      })()),
  };
}

function listen(app: Hono<AppEnv>, hostname: string, port: number): Promise<ServerType> {
  return new Promise((resolve, reject) => {
    const server = serve({ fetch: app.fetch, hostname, port }, () => resolve(server));
    server.once('error', (error: NodeJS.ErrnoException) => reject(listenError(error, hostname, port)));
  });
}

function listenError(error: NodeJS.ErrnoException, hostname: string, port: number): Error {
  const where = `${hostname}:${port}`;
  if (error.code === 'EADDRINUSE') return new StemsplitError('IO_ERROR', `${where} is already in use; choose another with --port`, { cause: error });
  if (error.code === 'EACCES') return new StemsplitError('IO_ERROR', `not allowed to listen on ${where}; ports below 1024 need privileges, choose another with --port`, { cause: error });
  if (error.code === 'EADDRNOTAVAIL') return new StemsplitError('IO_ERROR', `${hostname} is not an address of this machine; check --host`, { cause: error });
  return error;
}
