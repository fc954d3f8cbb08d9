/**
 * Where split jobs run, for the server and the CLI: in child processes of this one, each keeping
 * its models loaded between jobs. onnxruntime-node runs a graph synchronously on the calling
 * thread, so a separation in this process's main thread would stall every HTTP request (or the
 * CLI's progress bar) for seconds at a time. A process of its own also starts with the allocator
 * settings its models need (onnx/process-env.ts: SCNet-large 1.2x faster; Demucs v2's heap level), and
 * whatever happens in native code there (an abort, running out of memory) fails the job, not
 * the server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { StemsplitError, type ErrorCode } from '../errors.js';
import type { EnsembleMethod } from '../ensemble/algorithms.js';
import { allocatorOf, type ModelChoice } from '../models/registry.js';
import { removeAbandonedEntries } from '../onnx/cache.js';
import { ortProcessEnv, type AllocatorProfile } from '../onnx/process-env.js';
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
  /** `stop` (the API's cancel) stops the job as `cancel` does for all; `onLoaded` is called once its models are loaded. */
  split(job: SplitJob, onProgress: (progress: SplitProgress) => void, stop?: AbortSignal, onLoaded?: () => void): Promise<SplitFileResult>;
  /**
   * Stops every running job: one whose models are loaded at its next chunk or stem (the job then
   * fails, its staged stems removed by the worker, and its worker stays usable; safer than `close`
   * mid-job); one still loading or converting its models at once, its worker ended (a load is
   * mostly native or synchronous work that cannot hear a message) and a fresh one started for the
   * next job.
   */
  cancel(): void;
  close(): Promise<void>;
}

/** What the worker needs to load models (plain data: it crosses the process boundary as JSON). */
export interface SplitWorkerData {
  readonly cacheDir: string;
  readonly intraOpThreads: number;
  readonly precision?: Precision;
}

export type WorkerRequest = { readonly id: number; readonly job: SplitJob } | { readonly id: number; readonly cancel: true };
export type WorkerReply =
  | { readonly id: number; readonly type: 'loaded' }
  | { readonly id: number; readonly type: 'progress'; readonly progress: SplitProgress }
  | { readonly id: number; readonly type: 'done'; readonly result: SplitFileResult }
  | { readonly id: number; readonly type: 'error'; readonly code: ErrorCode | undefined; readonly message: string };

/** The worker's settings, as JSON, in its environment. */
export const WORKER_DATA_ENV = 'STEMSPLIT_SPLIT_WORKER_DATA';
/** Set for the worker: the executable then runs its worker bundle (WORKER_SCRIPT_ENV) instead of the CLI. */
export const WORKER_PROCESS_ENV = 'STEMSPLIT_SPLIT_PROCESS';
/** The worker script to run instead of the one beside this file (the executable's unpacked bundle). */
export const WORKER_SCRIPT_ENV = 'STEMSPLIT_SPLIT_WORKER';

/**
 * Starts the worker script: beside this file when built (.js), through tsx from the sources
 * (tests, development); the executable names its own. It runs in a session of its own, so a
 * Ctrl-C reaches only this process, which then stops the worker's job (Splitter.cancel).
 */
function startWorker(data: SplitWorkerData, allocator: AllocatorProfile): ChildProcess {
  disableOrtTelemetry();
  const fromSources = import.meta.url.endsWith('.ts');
  const script = process.env[WORKER_SCRIPT_ENV] ?? fileURLToPath(new URL(fromSources ? './worker-process.ts' : './worker-process.js', import.meta.url));
  const loader = fromSources ? ['--import', import.meta.resolve('tsx')] : [];
  return spawn(process.execPath, [...loader, script], {
    env: ortProcessEnv({ ...process.env, [WORKER_DATA_ENV]: JSON.stringify(data), [WORKER_PROCESS_ENV]: '1' }, allocator),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
    detached: true,
  });
}

interface Pending {
  readonly resolve: (result: SplitFileResult) => void;
  readonly reject: (error: Error) => void;
  readonly onProgress: (progress: SplitProgress) => void;
  readonly onLoaded?: () => void;
}

/** One worker process and the job it is running. */
class SplitWorker {
  readonly #worker: ChildProcess;
  readonly #pending = new Map<number, Pending>();
  /** Jobs sent whose models the worker has not reported loaded: a cancel ends the worker. */
  readonly #loading = new Set<number>();
  readonly #cacheDir: string;
  #nextId = 1;
  #dead = false;
  /** Set once #endLoad runs: it fails the jobs itself, after its clean-up. */
  #endingLoad = false;

  constructor(
    data: SplitWorkerData,
    /** The allocator settings it started with: it runs only jobs whose models want them. */
    readonly allocator: AllocatorProfile,
  ) {
    this.#cacheDir = data.cacheDir;
    this.#worker = startWorker(data, allocator);
    this.#worker.on('message', (reply: WorkerReply) => this.#onReply(reply));
    this.#worker.on('error', (error) => this.#failAll(error));
    this.#worker.on('exit', (code, signal) => {
      if (!this.#endingLoad) this.#failAll(new Error(`the split worker stopped (${signal ? `killed by ${signal}` : `exit code ${code}`})`));
    });
  }

  get dead(): boolean {
    return this.#dead;
  }

  run(job: SplitJob, onProgress: (progress: SplitProgress) => void, stop?: AbortSignal, onLoaded?: () => void): Promise<SplitFileResult> {
    const id = this.#nextId++;
    const cancel = () => this.#cancel(id);
    stop?.addEventListener('abort', cancel, { once: true });
    return new Promise<SplitFileResult>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress, ...(onLoaded ? { onLoaded } : {}) });
      this.#loading.add(id);
      this.#worker.send({ id, job } satisfies WorkerRequest);
    }).finally(() => stop?.removeEventListener('abort', cancel));
  }

  cancel(): void {
    for (const id of this.#pending.keys()) this.#cancel(id);
  }

  #cancel(id: number): void {
    if (!this.#pending.has(id)) return;
    if (this.#loading.has(id)) void this.#endLoad();
    else this.#worker.send({ id, cancel: true } satisfies WorkerRequest);
  }

  /**
   * Ends a worker whose job is still loading its models (a conversion, a session opening: seconds
   * to minutes of work that reads no message): its whole process group at once, then the cache
   * entries its conversion left half-written; the job fails as cancelled. No stems exist yet.
   */
  async #endLoad(): Promise<void> {
    if (this.#endingLoad) return;
    this.#endingLoad = true;
    this.#dead = true;
    const worker = this.#worker;
    if (worker.exitCode === null && worker.signalCode === null) {
      const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
      try {
        process.kill(-(worker.pid as number), 'SIGKILL');
      } catch {
        worker.kill('SIGKILL');
      }
      await exited;
    }
    if (worker.pid !== undefined) await removeAbandonedEntries(this.#cacheDir, worker.pid);
    this.#failAll(new Error('stopped while its model was loading'));
  }

  async terminate(): Promise<void> {
    this.#dead = true;
    const worker = this.#worker;
    if (worker.exitCode !== null || worker.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    worker.kill();
    await exited;
  }

  #onReply(reply: WorkerReply): void {
    const pending = this.#pending.get(reply.id);
    if (!pending) return;
    if (reply.type === 'loaded') {
      this.#loading.delete(reply.id);
      pending.onLoaded?.();
      return;
    }
    if (reply.type === 'progress') {
      pending.onProgress(reply.progress);
      return;
    }
    this.#pending.delete(reply.id);
    this.#loading.delete(reply.id);
    if (reply.type === 'done') pending.resolve(reply.result);
    else pending.reject(reply.code ? new StemsplitError(reply.code, reply.message) : new Error(reply.message));
  }

  #failAll(error: Error): void {
    this.#dead = true;
    for (const pending of this.#pending.values()) pending.reject(error);
    this.#pending.clear();
  }
}

/**
 * A pool of `size` workers, started on first use; a worker that dies is replaced. A job runs in a
 * worker started with its models' allocator settings (glibc reads them only as a process starts):
 * an idle worker with other settings is ended to make room for one with these.
 */
export function workerSplitter(data: SplitWorkerData, size: number): Splitter {
  const idle: SplitWorker[] = [];
  const all = new Set<SplitWorker>();
  /** Workers ended to make room, until they have exited (close waits for them). */
  const ending = new Set<Promise<void>>();
  const waiting: Array<{ readonly allocator: AllocatorProfile; readonly take: (worker: SplitWorker) => void }> = [];

  const start = (allocator: AllocatorProfile): SplitWorker => {
    const worker = new SplitWorker(data, allocator);
    all.add(worker);
    return worker;
  };
  const end = (worker: SplitWorker): void => {
    all.delete(worker);
    const exited = worker.terminate().finally(() => ending.delete(exited));
    ending.add(exited);
  };
  /** A worker for `allocator` now, or undefined when every worker is busy. */
  const available = (allocator: AllocatorProfile): SplitWorker | undefined => {
    // An idle worker with these settings, the most recently used (as the pool always took).
    const same = idle.findLastIndex((worker) => worker.allocator === allocator);
    if (same >= 0) return idle.splice(same, 1)[0];
    if (all.size >= size) {
      const other = idle.shift();
      if (other === undefined) return undefined;
      end(other);
    }
    return start(allocator);
  };
  const acquire = (allocator: AllocatorProfile): Promise<SplitWorker> => {
    const worker = available(allocator);
    return worker ? Promise.resolve(worker) : new Promise((take) => waiting.push({ allocator, take }));
  };
  const release = (worker: SplitWorker) => {
    if (worker.dead) all.delete(worker);
    else idle.push(worker);
    const next = waiting.shift();
    if (next === undefined) return;
    const ready = available(next.allocator);
    if (ready) next.take(ready);
    else waiting.unshift(next);
  };

  return {
    async split(job, onProgress, stop, onLoaded) {
      const worker = await acquire(allocatorOf(job.model));
      try {
        stop?.throwIfAborted();
        return await worker.run(job, onProgress, stop, onLoaded);
      } finally {
        release(worker);
      }
    },
    cancel() {
      for (const worker of all) worker.cancel();
    },
    async close() {
      await Promise.all([...[...all].map((worker) => worker.terminate()), ...ending]);
      all.clear();
      idle.length = 0;
    },
  };
}
