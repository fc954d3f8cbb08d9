/**
 * What runs jobs in a process, for `serve` and `stemsplit worker` alike: the worker processes,
 * the runner that claims jobs for them, and the webhook dispatcher that sends what they finish.
 */
import type { StemsplitConfig } from '../config.js';
import type { ModelRegistry } from '../models/registry.js';
import type { GuardOptions } from '../net/fetch.js';
import { deviceSplitter } from '../split-worker/worker-pool.js';
import type { DataStore } from '../store/index.js';
import { JobRunner, type PresentSplit } from './runner.js';
import { WebhookDispatcher } from './webhooks.js';

export interface JobProcessingOptions {
  readonly guard: GuardOptions;
  readonly present: PresentSplit;
  readonly log: (line: string) => void;
  readonly webhookBackoff?: (attempts: number) => number;
}

export interface JobProcessing {
  /** Absent on a node that runs no jobs (`serve --workers 0`). */
  readonly runner: JobRunner | undefined;
  readonly webhooks: WebhookDispatcher;
  /** What this node's jobs run on, in the order a job is offered them ("GPU: … (Vulkan)", "CPU"); none on an API-only node. */
  readonly devices: readonly string[];
  start(): void;
  /** Stops claiming, lets running jobs finish, stops the threads and the dispatcher. */
  stop(): Promise<void>;
}

export function startJobProcessing(data: DataStore, registry: ModelRegistry, config: StemsplitConfig, options: JobProcessingOptions): JobProcessing {
  const webhooks = new WebhookDispatcher(data, {
    guard: options.guard,
    log: options.log,
    ...(options.webhookBackoff ? { backoff: options.webhookBackoff } : {}),
  });
  const splitter =
    config.concurrency > 0
      ? deviceSplitter({ cacheDir: config.cacheDir, intraOpThreads: config.intraOpThreads, precision: config.precision }, config.concurrency, {
          choice: config.device,
          gpuWorkers: config.gpuWorkers,
        })
      : undefined;
  const runner = splitter
    ? new JobRunner(data, registry, splitter, options.present, {
        concurrency: splitter.capacity,
        log: options.log,
        onTerminal: () => webhooks.kick(),
        leaseMs: config.jobLeaseSeconds * 1000,
      })
    : undefined;
  return {
    runner,
    webhooks,
    devices: splitter?.devices ?? [],
    start() {
      webhooks.start();
      runner?.start();
    },
    async stop() {
      await runner?.stop();
      await webhooks.stop();
      await splitter?.close();
    },
  };
}
