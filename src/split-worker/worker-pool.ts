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
import { describeDevice, CPU, resolveDevice, type AdapterSurvey, type Device, type DeviceChoice } from '../devices/index.js';
import { describeError, isStemsplitError, StemsplitError, type ErrorCode } from '../errors.js';
import type { EnsembleMethod } from '../ensemble/algorithms.js';
import { allocatorOf, type ModelChoice } from '../models/registry.js';
import { removeAbandonedEntries } from '../onnx/cache.js';
import { DEFAULT_ALLOCATOR, ortProcessEnv, type AllocatorProfile } from '../onnx/process-env.js';
import type { Precision } from '../onnx/quantize.js';
import { disableOrtTelemetry, ORT_PROVIDER_ENV } from '../onnx/session.js';
import type { SplitFileResult, SplitProgress, StemOutputOptions } from './split-audio-file.js';
import { removeStaging } from './staging.js';

/**
 * One split for a worker: which file, which model, where to, and what to write (as splitAudioFile
 * takes it: a split request's output, as split-request/'s stemOutputOf makes it for the CLI and the job runner alike).
 */
export interface SplitJob extends StemOutputOptions {
  readonly inputPath: string;
  /** One model, or an ensemble whose members run one after another (ensemble/separate.ts). */
  readonly model: ModelChoice;
  /** How an ensemble's members are combined; default avg_wave, equal weights. */
  readonly ensemble?: EnsembleMethod;
  readonly outDir: string;
  /** A chain's later steps (split-worker/chain.ts): each splits a stem an earlier step made. */
  readonly then?: readonly ChainStepRef[];
  /** A chain writes the stems its later steps split too. */
  readonly keepIntermediate?: boolean;
}

/** The allocator settings a job's models want: a chain's steps', where they agree (as an ensemble's members'). */
function jobAllocator(job: SplitJob): AllocatorProfile {
  const profiles = new Set([job.model, ...(job.then ?? []).map((step) => step.model)].map(allocatorOf));
  return profiles.size === 1 ? ([...profiles][0] as AllocatorProfile) : DEFAULT_ALLOCATOR;
}

/** A chain's later step, resolved: the stem it splits and its model (an ensemble with its method). */
export interface ChainStepRef {
  readonly input: string;
  readonly model: ModelChoice;
  readonly ensemble?: EnsembleMethod;
}

/** A split's result, and the device that ran it ("GPU: NVIDIA H200 (Vulkan)", "CPU"). */
export interface SplitRun extends SplitFileResult {
  readonly device: string;
}

/**
 * Called once a job's models are loaded, with the device they run on; called again, with a
 * reason, when the GPU failed (lost, out of memory, an operator it cannot run) and the job starts
 * over on the CPU.
 */
export type OnLoaded = (device: string, fellBackBecause?: string) => void;

export interface Splitter {
  /** What its workers run on, in the order a job is offered them ("GPU: … (Vulkan)", "CPU"). */
  readonly devices: readonly string[];
  /** Jobs it runs at once: its GPU and CPU workers together. */
  readonly capacity: number;
  /** `stop` (the API's cancel) stops the job as `cancel` does for all; `onLoaded` is called once its models are loaded. */
  split(job: SplitJob, onProgress: (progress: SplitProgress) => void, stop?: AbortSignal, onLoaded?: OnLoaded): Promise<SplitRun>;
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

/** How long a running job has to stop at its next chunk after a cancel before its worker is ended. */
const CANCEL_GRACE_MS = 1000;

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
function startWorker(data: SplitWorkerData, allocator: AllocatorProfile, device: Device): ChildProcess {
  disableOrtTelemetry();
  const fromSources = import.meta.url.endsWith('.ts');
  const script = process.env[WORKER_SCRIPT_ENV] ?? fileURLToPath(new URL(fromSources ? './worker-process.ts' : './worker-process.js', import.meta.url));
  const loader = fromSources ? ['--import', import.meta.resolve('tsx')] : [];
  return spawn(process.execPath, [...loader, script], {
    env: ortProcessEnv(
      {
        ...process.env,
        [WORKER_DATA_ENV]: JSON.stringify(data),
        [WORKER_PROCESS_ENV]: '1',
        [ORT_PROVIDER_ENV]: device.kind === 'gpu' ? device.adapter.provider : 'cpu',
      },
      allocator,
    ),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    serialization: 'advanced',
    detached: true,
  });
}

interface Pending {
  /** Where the job writes: a worker ended mid-split leaves its staging folder there. */
  readonly outDir: string;
  readonly resolve: (result: SplitFileResult) => void;
  readonly reject: (error: Error) => void;
  readonly onProgress: (progress: SplitProgress) => void;
  readonly onLoaded?: () => void;
}

/** How many GPU workers the pool keeps beside its CPU workers, and whether the CPU may take jobs. */
export interface GpuLane {
  readonly device: Device & { readonly kind: 'gpu' };
  /** GPU workers at once (GPU memory is the limit: one by default). */
  readonly workers: number;
  /**
   * `--device gpu`: every job on the GPU, a GPU failure fails it. Otherwise (`auto`) a job goes to
   * an idle GPU worker first, else an idle CPU worker, and a GPU failure starts it over on the CPU.
   */
  readonly only: boolean;
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
    /** What its sessions run on. */
    readonly device: Device = CPU,
  ) {
    this.#cacheDir = data.cacheDir;
    this.#worker = startWorker(data, allocator, device);
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
      this.#pending.set(id, { outDir: job.outDir, resolve, reject, onProgress, ...(onLoaded ? { onLoaded } : {}) });
      this.#loading.add(id);
      this.#worker.send({ id, job } satisfies WorkerRequest);
    }).finally(() => stop?.removeEventListener('abort', cancel));
  }

  cancel(): void {
    for (const id of this.#pending.keys()) this.#cancel(id);
  }

  #cancel(id: number): void {
    if (!this.#pending.has(id)) return;
    if (this.#loading.has(id)) {
      void this.#endLoad('stopped while its model was loading');
      return;
    }
    this.#worker.send({ id, cancel: true } satisfies WorkerRequest);
    // A chunk hears the cancel only when it ends: seconds on a slow GPU (a software one) or a big
    // model. One that has not stopped by then is ended outright, so a cancel takes under 2 s anywhere.
    setTimeout(() => {
      if (this.#pending.has(id)) void this.#endLoad(`stopped: its chunk was still running ${CANCEL_GRACE_MS / 1000} s after the cancel`);
    }, CANCEL_GRACE_MS).unref();
  }

  /**
   * Ends a worker whose job is still loading its models (a conversion, a session opening: seconds
   * to minutes of work that reads no message): its whole process group at once, then the cache
   * entries its conversion left half-written; the job fails as cancelled. No stems exist yet.
   */
  async #endLoad(reason: string): Promise<void> {
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
    if (worker.pid !== undefined) {
      await removeAbandonedEntries(this.#cacheDir, worker.pid);
      // A job stopped mid-chunk leaves its half-encoded stems in the worker's staging folder.
      for (const { outDir } of this.#pending.values()) await removeStaging(outDir, worker.pid);
    }
    this.#failAll(new Error(reason));
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
 * The GPU workers `--device` asks for: none for `cpu`, or for `auto` on a machine without a
 * hardware adapter; `gpu` with no adapter at all is GPU_UNAVAILABLE (devices/index.ts).
 */
export function gpuLane(choice: DeviceChoice, workers: number, survey?: AdapterSurvey): GpuLane | undefined {
  if (workers < 1) return undefined;
  const device = resolveDevice(choice, survey);
  return device.kind === 'gpu' ? { device, workers, only: choice === 'gpu' } : undefined;
}

/** The pool `--device` and `--gpu-workers` ask for, beside `cpuWorkers` CPU workers (none with `--device gpu`). */
export function deviceSplitter(data: SplitWorkerData, cpuWorkers: number, device: { readonly choice: DeviceChoice; readonly gpuWorkers: number }): Splitter {
  // int8 graphs are for the CPU: the GPU providers have no integer matrix products, so those would run on the CPU anyway.
  if (data.precision === 'int8') {
    if (device.choice === 'gpu')
      throw new StemsplitError(
        'USAGE',
        '--precision int8 runs on the CPU only (the GPU providers have no integer matrix products); use --device gpu with fp32, or --device cpu',
      );
    return workerSplitter(data, cpuWorkers);
  }
  return workerSplitter(data, cpuWorkers, gpuLane(device.choice, device.gpuWorkers));
}

/** The workers of one device: `size` at most, started on first use, a dead one replaced. */
interface Lane {
  readonly device: Device;
  readonly size: number;
  readonly idle: SplitWorker[];
  readonly all: Set<SplitWorker>;
}

/**
 * A pool of `size` CPU workers (and, with `gpu`, GPU workers beside them), started on first use;
 * a worker that dies is replaced. A job runs in a worker started with its models' allocator
 * settings (glibc reads them only as a process starts): an idle worker with other settings is
 * ended to make room for one with these.
 */
export function workerSplitter(data: SplitWorkerData, size: number, gpu?: GpuLane): Splitter {
  const lanes: Lane[] = [
    ...(gpu ? [{ device: gpu.device, size: gpu.workers, idle: [], all: new Set<SplitWorker>() }] : []),
    ...(gpu?.only ? [] : [{ device: CPU, size, idle: [], all: new Set<SplitWorker>() }]),
  ];
  const cpuLane = lanes.find((lane) => lane.device.kind === 'cpu');
  /** Workers ended to make room, until they have exited (close waits for them). */
  const ending = new Set<Promise<void>>();
  const waiting: Array<{ readonly allocator: AllocatorProfile; readonly lanes: readonly Lane[]; readonly take: (worker: SplitWorker) => void }> = [];

  const laneOf = (worker: SplitWorker): Lane => lanes.find((lane) => lane.device === worker.device) as Lane;
  const end = (worker: SplitWorker): void => {
    laneOf(worker).all.delete(worker);
    const exited = worker.terminate().finally(() => ending.delete(exited));
    ending.add(exited);
  };
  /** A worker of `lane` for `allocator` now, or undefined when every one is busy. */
  const availableIn = (lane: Lane, allocator: AllocatorProfile): SplitWorker | undefined => {
    // An idle worker with these settings, the most recently used (as the pool always took).
    const same = lane.idle.findLastIndex((worker) => worker.allocator === allocator);
    if (same >= 0) return lane.idle.splice(same, 1)[0];
    if (lane.all.size >= lane.size) {
      const other = lane.idle.shift();
      if (other === undefined) return undefined;
      end(other);
    }
    const worker = new SplitWorker(data, allocator, lane.device);
    lane.all.add(worker);
    return worker;
  };
  const available = (allocator: AllocatorProfile, among: readonly Lane[]): SplitWorker | undefined => {
    for (const lane of among) {
      const worker = availableIn(lane, allocator);
      if (worker) return worker;
    }
    return undefined;
  };
  const acquire = (allocator: AllocatorProfile, among: readonly Lane[]): Promise<SplitWorker> => {
    const worker = available(allocator, among);
    return worker ? Promise.resolve(worker) : new Promise((take) => waiting.push({ allocator, lanes: among, take }));
  };
  const release = (worker: SplitWorker) => {
    const lane = laneOf(worker);
    if (worker.dead) lane.all.delete(worker);
    else lane.idle.push(worker);
    for (const [index, next] of waiting.entries()) {
      const ready = available(next.allocator, next.lanes);
      if (!ready) continue;
      waiting.splice(index, 1);
      next.take(ready);
      return;
    }
  };
  const runOn = async (
    among: readonly Lane[],
    job: SplitJob,
    onProgress: (progress: SplitProgress) => void,
    stop?: AbortSignal,
    onLoaded?: OnLoaded,
  ): Promise<SplitRun> => {
    const worker = await acquire(jobAllocator(job), among);
    const device = describeDevice(worker.device);
    try {
      stop?.throwIfAborted();
      const result = await worker.run(job, onProgress, stop, () => onLoaded?.(device));
      return { ...result, device };
    } finally {
      release(worker);
    }
  };

  return {
    devices: lanes.map((lane) => describeDevice(lane.device)),
    capacity: lanes.reduce((sum, lane) => sum + lane.size, 0),
    async split(job, onProgress, stop, onLoaded) {
      try {
        return await runOn(lanes, job, onProgress, stop, onLoaded);
      } catch (error) {
        // The GPU failed (lost, out of memory, an operator it cannot run): the CPU starts the job over, saying why.
        if (!isStemsplitError(error) || error.code !== 'GPU_UNAVAILABLE' || cpuLane === undefined || stop?.aborted) throw error;
        onLoaded?.(describeDevice(CPU), describeError(error));
        return runOn([cpuLane], job, onProgress, stop, onLoaded);
      }
    },
    cancel() {
      for (const lane of lanes) for (const worker of lane.all) worker.cancel();
    },
    async close() {
      const workers = lanes.flatMap((lane) => [...lane.all]);
      await Promise.all([...workers.map((worker) => worker.terminate()), ...ending]);
      for (const lane of lanes) {
        lane.all.clear();
        lane.idle.length = 0;
      }
    },
  };
}
