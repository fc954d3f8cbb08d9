/**
 * The composition root of `stemsplit worker`: a process that runs split jobs and nothing else,
 * on any box that reaches the shared PostgreSQL and mounts the shared data dir at the same path.
 * It claims jobs from the database, runs them, records their outcome and sends their webhooks.
 */
import { presentSplit } from './api/present.js';
import { createStemUrlSigner } from './api/stem-urls.js';
import type { StemsplitConfig } from './config.js';
import { StemsplitError } from './errors.js';
import { startJobProcessing, type JobProcessing } from './jobs/processing.js';
import { registryFor } from './models/registry.js';
import { checkServedModels } from './models/served-check.js';
import { makeDataDirPrivate, openDataStore, urlSigningKey, type DataStore } from './store/index.js';

export interface WorkerOptions {
  readonly log?: (line: string) => void;
}

export interface RunningWorker {
  readonly name: string;
  readonly data: DataStore;
  readonly jobs: JobProcessing;
  close(): Promise<void>;
}

export async function startWorker(config: StemsplitConfig, options: WorkerOptions = {}): Promise<RunningWorker> {
  if (!config.databaseUrl) {
    throw new StemsplitError(
      'USAGE',
      'stemsplit worker needs --database-url postgres://… (or STEMSPLIT_DATABASE_URL): on one box with SQLite, serve runs the jobs itself',
    );
  }
  if (config.concurrency < 1) throw new StemsplitError('USAGE', 'stemsplit worker needs --concurrency of at least 1');
  checkServedModels(registryFor(config), config);
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  await makeDataDirPrivate(config.dataDir, log);
  const data = await openDataStore(config.dataDir, {
    initialCredits: config.initialCredits,
    idempotencyTtlSeconds: config.idempotencyTtlSeconds,
    databaseUrl: config.databaseUrl,
    // Each running job holds at most one connection at a time; the rest are for the dispatcher and leases.
    maxConnections: config.concurrency + 3,
    log,
  });
  try {
    const signer = createStemUrlSigner(await urlSigningKey(data.store), config.stemUrlTtlSeconds);
    const jobs = startJobProcessing(data, registryFor(config), config, {
      guard: { allowPrivate: config.allowPrivateUrls },
      log,
      present: (split, nowMs) => presentSplit(split, signer, split.baseUrl, nowMs, split.apiKeyId),
    });
    jobs.start();
    let closing: Promise<void> | undefined;
    return {
      name: jobs.runner?.name ?? 'worker',
      data,
      jobs,
      close: () =>
        (closing ??= (async () => {
          await jobs.stop();
          await data.close();
        })()),
    };
  } catch (error) {
    await data.close();
    throw error;
  }
}
