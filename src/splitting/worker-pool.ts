/**
 * Where split jobs run, for the server and the CLI: in worker threads. onnxruntime-node runs a
 * graph synchronously on the calling thread, so a separation on the main thread would stall
 * every HTTP request (or the CLI's progress bar) for seconds at a time. Worker threads also
 * allocate from their own glibc arenas, where ORT's large tensors are reused between runs
 * instead of page-faulted in again: a minute of audio took Demucs 29.0 s in a worker, 30.1 s
 * on the main thread (docs/demucs.md). Each worker keeps its models loaded between jobs.
 */
import { Worker } from 'node:worker_threads';
import { StemsplitError, type ErrorCode } from '../errors.js';
import type { EnsembleMethod } from '../ensemble/algorithms.js';
import type { ModelChoice } from '../models/registry.js';
import type { Precision } from '../onnx/quantize.js';
import { disableOrtTelemetry } from '../onnx/session.js';
import type { SplitFileResult, SplitProgress, StemOutputOptions } from './split-audio-file.js';

/** One split for a worker: which file, which model, where to, and what to write (as splitAudioFile takes it). */
export interface SplitJob extends StemOutputOptions {
  readonly inputPath: string;
  /** One model, or an ensemble whose members run one after another (splitting/ensemble.ts). */
  readonly model: ModelChoice;
  /** How an ensemble's members are combined; default avg_wave, equal weights. */
  readonly ensemble?: EnsembleMethod;
  readonly outDir: string;
}

export interface Splitter {
  split(job: SplitJob, onProgress: (progress: SplitProgress) => void): Promise<SplitFileResult>;
  /**
   * Asks every running job to stop at its next chunk or stem: the job then fails (its staged
   * stems removed by the worker) and its worker stays usable. Safer than `close` mid-job:
   * terminating a worker while ONNX Runtime runs in it aborts the process (Napi::Error).
   */
  cancel(): void;
  close(): Promise<void>;
}

/** What the worker needs to load models (plain data: it crosses the thread boundary). */
export interface SplitWorkerData {
  readonly cacheDir: string;
  readonly intraOpThreads: number;
  readonly precision?: Precision;
}

export type WorkerRequest = { readonly id: number; readonly job: SplitJob } | { readonly id: number; readonly cancel: true };
export type WorkerReply =
  | { readonly id: number; readonly type: 'progress'; readonly progress: SplitProgress }
  | { readonly id: number; readonly type: 'done'; readonly result: SplitFileResult }
  | { readonly id: number; readonly type: 'error'; readonly code: ErrorCode | undefined; readonly message: string };

/**
 * Starts the worker script: beside this file when built (.js); the executable names its own.
 * Run from TypeScript sources (tests, development), workers do not inherit tsx's loader, so the
 * worker registers it before importing the .ts file.
 */
function startWorker(data: SplitWorkerData): Worker {
  disableOrtTelemetry();
  const override = process.env['STEMSPLIT_SPLIT_WORKER'];
  if (override) return new Worker(override, { workerData: data });
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker-thread.js', import.meta.url), { workerData: data });
  const script = new URL('./worker-thread.ts', import.meta.url).href;
  const boot = `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(script)}); })`;
  return new Worker(boot, { eval: true, workerData: data });
}

interface Pending {
  readonly resolve: (result: SplitFileResult) => void;
  readonly reject: (error: Error) => void;
  readonly onProgress: (progress: SplitProgress) => void;
}

/** One worker thread and the job it is running. */
class SplitWorker {
  readonly #worker: Worker;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #dead = false;

  constructor(data: SplitWorkerData) {
    this.#worker = startWorker(data);
    this.#worker.on('message', (reply: WorkerReply) => this.#onReply(reply));
    this.#worker.on('error', (error) => this.#failAll(error));
    this.#worker.on('exit', (code) => this.#failAll(new Error(`the split worker stopped (exit code ${code})`)));
  }

  get dead(): boolean {
    return this.#dead;
  }

  run(job: SplitJob, onProgress: (progress: SplitProgress) => void): Promise<SplitFileResult> {
    const id = this.#nextId++;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ id, job } satisfies WorkerRequest);
    });
  }

  cancel(): void {
    for (const id of this.#pending.keys()) this.#worker.postMessage({ id, cancel: true } satisfies WorkerRequest);
  }

  async terminate(): Promise<void> {
    this.#dead = true;
    await this.#worker.terminate();
  }

  #onReply(reply: WorkerReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    if (reply.type === 'progress') {
      pending.onProgress(reply.progress);
      return;
    }
    this.#pending.delete(reply.id);
    if (reply.type === 'done') pending.resolve(reply.result);
    else pending.reject(reply.code ? new StemsplitError(reply.code, reply.message) : new Error(reply.message));
  }

  #failAll(error: Error): void {
    this.#dead = true;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/** A pool of `size` workers, started on first use; a worker that dies is replaced. */
export function workerSplitter(data: SplitWorkerData, size: number): Splitter {
  const idle: SplitWorker[] = [];
  const all = new Set<SplitWorker>();
  const waiting: Array<(worker: SplitWorker) => void> = [];

  const acquire = (): Promise<SplitWorker> => {
    const ready = idle.pop();
    if (ready) return Promise.resolve(ready);
    if (all.size < size) {
      const worker = new SplitWorker(data);
      all.add(worker);
      return Promise.resolve(worker);
    }
    return new Promise((resolve) => waiting.push(resolve));
  };
  const release = (worker: SplitWorker) => {
    if (worker.dead) {
      all.delete(worker);
      const next = waiting.shift();
      if (next) void acquire().then(next);
      return;
    }
    const next = waiting.shift();
    if (next) next(worker);
    else idle.push(worker);
  };

  return {
    async split(job, onProgress) {
      const worker = await acquire();
      try {
        return await worker.run(job, onProgress);
      } finally {
        release(worker);
      }
    },
    cancel() {
      for (const worker of all) worker.cancel();
    },
    async close() {
      await Promise.all([...all].map((worker) => worker.terminate()));
      all.clear();
      idle.length = 0;
    },
  };
}
