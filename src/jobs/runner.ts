/**
 * The worker pool: a p-queue of split jobs. queued → processing → succeeded | failed.
 * Terminal transitions are one transaction each: a success with its webhook outbox row, a
 * failure with its refund and its outbox row. Jobs a crash left unfinished are resumed on start.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import PQueue from 'p-queue';
import { describeError, isJobErrorCode, isStemsplitError, StemsplitError, type JobErrorCode } from '../errors.js';
import type { ModelRegistry } from '../models/registry.js';
import type { DataStore, Split } from '../store/index.js';
import type { Splitter } from '../splitting/worker-pool.js';
import { SPLIT_EVENT } from './webhooks.js';

/** A job that took the server down this many times is failed instead of retried again. */
const MAX_ATTEMPTS = 3;
/** When a job's outcome could not be written (the database's disk is full), run it again after this long. */
const RECORD_RETRY_MS = 10_000;

/** The public resource of a job, as its webhook carries it (the API layer knows its shape and URLs). */
export type PresentSplit = (split: Split, nowMs: number) => unknown;

export interface RunnerOptions {
  readonly concurrency: number;
  readonly mp3BitrateKbps?: number;
  readonly log?: (line: string) => void;
  /** Called after a job became terminal and its webhook (if any) was queued. */
  readonly onTerminal?: (split: Split) => void;
}

export class JobRunner {
  readonly #data: DataStore;
  readonly #registry: ModelRegistry;
  readonly #splitter: Splitter;
  readonly #present: PresentSplit;
  readonly #options: RunnerOptions;
  readonly #queue: PQueue;
  readonly #pending = new Set<string>();
  readonly #retryTimers = new Set<NodeJS.Timeout>();

  constructor(data: DataStore, registry: ModelRegistry, splitter: Splitter, present: PresentSplit, options: RunnerOptions) {
    this.#data = data;
    this.#registry = registry;
    this.#splitter = splitter;
    this.#present = present;
    this.#options = options;
    this.#queue = new PQueue({ concurrency: Math.max(1, options.concurrency) });
  }

  /** Re-queues every job left queued or processing, oldest first. */
  resumeUnfinished(): number {
    const unfinished = this.#data.splits.unfinished();
    for (const split of unfinished) {
      if (split.attempts >= MAX_ATTEMPTS) {
        this.#fail(split, 'INTERNAL_ERROR', `the job was interrupted ${split.attempts} times; it was stopped and refunded`);
      } else {
        this.enqueue(split.id);
      }
    }
    return unfinished.length;
  }

  enqueue(splitId: string): void {
    if (this.#pending.has(splitId)) return;
    this.#pending.add(splitId);
    void this.#queue.add(async () => {
      try {
        await this.#process(splitId);
      } catch (error) {
        // Even the job's failure could not be recorded: keep the server up and try again later.
        this.#options.log?.(`split ${splitId} could not be recorded: ${describeError(error)}; retrying in ${RECORD_RETRY_MS / 1000} s`);
        this.#retryLater(splitId);
      } finally {
        this.#pending.delete(splitId);
      }
    });
  }

  #retryLater(splitId: string): void {
    const timer = setTimeout(() => {
      this.#retryTimers.delete(timer);
      this.enqueue(splitId);
    }, RECORD_RETRY_MS);
    timer.unref();
    this.#retryTimers.add(timer);
  }

  get queued(): number {
    return this.#queue.size + this.#queue.pending;
  }

  /** Resolves when every queued job has finished. */
  onIdle(): Promise<void> {
    return this.#queue.onIdle();
  }

  /** Stops taking new jobs; running ones finish. Jobs still queued stay queued in SQLite. */
  async stop(): Promise<void> {
    for (const timer of this.#retryTimers) clearTimeout(timer);
    this.#queue.clear();
    await this.#queue.onIdle();
  }

  async #process(splitId: string): Promise<void> {
    const split = this.#data.splits.get(splitId);
    if (!split || (split.status !== 'queued' && split.status !== 'processing')) return;
    let stage: JobErrorCode = 'SEPARATION_FAILED';
    try {
      const ref = this.#registry.resolve(split.modelName);
      if (!this.#data.splits.markProcessing(split.id, ref.name)) return;
      let lastPercent = -1;
      const outDir = this.#data.layout.absolute(this.#data.layout.stemDir(split.id));
      const source = this.#data.layout.absolute(split.sourcePath);
      if (!existsSync(source)) throw new StemsplitError('SOURCE_FETCH_FAILED', 'the source audio is no longer on the server');
      stage = 'AUDIO_DECODE_FAILED';
      const job = { inputPath: source, model: ref, outDir, format: 'mp3' as const };
      const started = Date.now();
      const result = await this.#splitter.split(
        this.#options.mp3BitrateKbps ? { ...job, mp3BitrateKbps: this.#options.mp3BitrateKbps } : job,
        ({ phase, percent }) => {
          stage = phase === 'decode' ? 'AUDIO_DECODE_FAILED' : phase === 'separate' ? 'SEPARATION_FAILED' : 'ENCODE_FAILED';
          const whole = Math.floor(percent);
          if (whole !== lastPercent && whole < 100) {
            lastPercent = whole;
            this.#recordProgress(split.id, whole);
          }
        },
      );
      this.#succeed(split.id, Object.keys(result.stems));
      // One line per finished job, so whoever runs the server sees the work it does.
      const took = ((Date.now() - started) / 1000).toFixed(1);
      this.#options.log?.(`split ${split.id} succeeded: ${result.durationSeconds.toFixed(1)} s of audio with ${ref.name} in ${took} s`);
    } catch (error) {
      const code: JobErrorCode = isDiskFull(error) ? 'STORAGE_FAILED' : isStemsplitError(error) && isJobErrorCode(error.code) ? error.code : stage;
      this.#options.log?.(`split ${split.id} failed: ${describeError(error)}`);
      await rm(this.#data.layout.absolute(this.#data.layout.stemDir(split.id)), { recursive: true, force: true });
      this.#fail(split, code, describeError(error));
    }
  }

  /**
   * Progress is best effort: it arrives in a worker's message handler, where a throw (the
   * database's disk is full) would take the server down; the job's outcome reports such trouble.
   */
  #recordProgress(splitId: string, percent: number): void {
    try {
      this.#data.splits.setProgress(splitId, percent);
    } catch (error) {
      this.#options.log?.(`split ${splitId}: progress not recorded: ${describeError(error)}`);
    }
  }

  #succeed(splitId: string, stems: readonly string[]): void {
    const finished = this.#data.store.transaction(() => {
      if (!this.#data.splits.markSucceeded(splitId, stems)) return undefined;
      const split = this.#data.splits.get(splitId) as Split;
      this.#queueWebhook(split);
      return split;
    });
    if (finished) this.#options.onTerminal?.(finished);
  }

  #fail(split: Split, code: JobErrorCode, message: string): void {
    const finished = this.#data.store.transaction(() => {
      if (!this.#data.splits.markFailed(split.id, code, message)) return undefined;
      this.#data.accounts.addLedgerEntry(split.accountId, 'refund', split.creditsUsed, split.id, `refund of failed ${split.id}`);
      const failed = this.#data.splits.get(split.id) as Split;
      this.#queueWebhook(failed);
      return failed;
    });
    if (finished) this.#options.onTerminal?.(finished);
  }

  #queueWebhook(split: Split): void {
    if (!split.webhookUrl) return;
    const data = this.#present(split, this.#data.clock.now());
    this.#data.deliveries.enqueue(split.id, split.accountId, split.webhookUrl, JSON.stringify({ event: SPLIT_EVENT, data }));
  }
}

/** Out of space, however it was reported: an errno here or in a cause, or ffmpeg's own words. */
function isDiskFull(error: unknown, depth = 0): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ENOSPC' || code === 'EDQUOT' || code === 'EROFS' || code === 'STORAGE_FAILED') return true;
  if (/no space left on device|disk quota exceeded|read-only file system|\b(ENOSPC|EDQUOT|EROFS)\b/i.test(describeError(error))) return true;
  const cause = (error as { cause?: unknown } | undefined)?.cause;
  return depth < 4 && cause !== undefined && isDiskFull(cause, depth + 1);
}
