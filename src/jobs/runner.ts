/**
 * The job runner: claims split jobs from the database and runs them, `concurrency` at a time.
 * queued → processing → succeeded | failed. The queue is the `splits` table itself (see
 * store/splits.ts): a claim is a lease this runner renews while the job runs, so a runner that
 * dies (SIGKILL, power loss) loses its jobs to the next runner once the lease lapses; any number
 * of runners, in any number of processes on any number of boxes, can share one PostgreSQL.
 *
 * Terminal transitions are one transaction each, and only the lease holder's counts: a success
 * with its webhook outbox row, a failure with its refund and its outbox row. The charge was made
 * when the job was created, so a job run twice is never charged twice. The one exception is the
 * owner's cancel (jobs/cancel.ts), which ends the job whoever holds it; the holder then stops its
 * split (stopCancelled) and records nothing.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, isStemsplitError, jobErrorCodeOf, StemsplitError, type JobErrorCode } from '../errors.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, type EnsembleMethod } from '../ensemble/algorithms.js';
import { familyOptionsFrom } from '../models/families.js';
import { isEnsembleRef, type ModelChoice, type ModelRegistry } from '../models/registry.js';
import { OutageLog, parseJobOptions, type DataStore, type JobOptions, type Split } from '../store/index.js';
import type { ChainStepRef, SplitJob, Splitter } from '../split-worker/worker-pool.js';
import PQueue from 'p-queue';
import { SerialPass } from './serial-pass.js';
import { stemOutputOf } from '../split-request/split-request.js';
import { queueWebhook, refundAndAnnounce, type PresentSplit } from './cancel.js';

export type { PresentSplit } from './cancel.js';

/** A job whose runner died this many times is failed and refunded instead of run again. */
const MAX_ATTEMPTS = 3;
/** When a job's outcome could not be written (the database is down, its disk full), try again after this long. */
const RECORD_RETRY_MS = 10_000;
/** How often an idle runner looks for jobs made by other processes. */
const POLL_MS = 1_000;
/**
 * How often a busy runner asks whether its jobs were cancelled (by the API of another process;
 * this process's API tells it at once): a cancel must stop the worker within 2 s.
 */
const CANCEL_POLL_MS = 250;

export interface RunnerOptions {
  readonly concurrency: number;
  /** A claim lasts this long unless renewed; it is renewed every third of it. */
  readonly leaseMs: number;
  readonly log?: (line: string) => void;
  /** Called after a job became terminal and its webhook (if any) was queued. */
  readonly onTerminal?: (split: Split) => void;
}

/** This runner's name in `leaseOwner`: which box and process holds a job, for whoever looks. */
function runnerName(): string {
  return `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
}

export class JobRunner {
  readonly name = runnerName();
  readonly #data: DataStore;
  readonly #registry: ModelRegistry;
  readonly #splitter: Splitter;
  readonly #present: PresentSplit;
  readonly #options: RunnerOptions;
  readonly #leaseMs: number;
  /** Runs the claimed jobs, `concurrency` at a time; a job is claimed only when a slot is free. */
  readonly #queue: PQueue;
  /** The jobs this runner holds, whose leases it renews, each with what stops its split. */
  readonly #active = new Map<string, AbortController>();
  readonly #stopping = new AbortController();
  #started = false;
  readonly #claims = new SerialPass(
    () => this.#claimWhileFree(),
    (again) => (again ? this.kick() : this.#schedulePoll()),
  );
  #pollTimer: NodeJS.Timeout | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #cancelWatch: NodeJS.Timeout | undefined;
  /** A database outage is logged once, not at every claim, renewal or progress write it fails. */
  readonly #outage: OutageLog;

  constructor(data: DataStore, registry: ModelRegistry, splitter: Splitter, present: PresentSplit, options: RunnerOptions) {
    this.#data = data;
    this.#registry = registry;
    this.#splitter = splitter;
    this.#present = present;
    this.#options = options;
    this.#leaseMs = options.leaseMs;
    this.#queue = new PQueue({ concurrency: Math.max(1, options.concurrency) });
    this.#outage = new OutageLog(
      'job runner',
      `running jobs go on, their progress and outcomes are written when it is back (outcomes retried every ${RECORD_RETRY_MS / 1000} s), and new jobs are claimed then`,
      options.log,
    );
  }

  /** Starts claiming jobs: now, whenever `kick` is called, and every poll interval. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#heartbeat = setInterval(() => void this.#renewLeases(), Math.max(100, this.#leaseMs / 3));
    this.#heartbeat.unref();
    this.#cancelWatch = setInterval(() => void this.stopCancelled(), CANCEL_POLL_MS);
    this.#cancelWatch.unref();
    this.kick();
  }

  /**
   * Stops the splits of the jobs this runner holds that their owners cancelled meanwhile (through
   * the API): each worker is told to stop at its next chunk, and the job's files are removed.
   */
  async stopCancelled(): Promise<void> {
    if (this.#active.size === 0) return;
    let cancelled: string[];
    try {
      cancelled = await this.#data.splits.cancelled([...this.#active.keys()]);
    } catch (error) {
      this.#outage.failed(error);
      return;
    }
    for (const id of cancelled) this.#active.get(id)?.abort();
  }

  /** Looks for claimable jobs now (a job was just created here, or one just finished). */
  kick(): void {
    if (!this.#started || this.#stopping.signal.aborted) return;
    this.#claims.run();
  }

  /** Stops claiming; running jobs finish (their outcome is recorded if the database lets it). */
  async stop(): Promise<void> {
    this.#stopping.abort();
    clearTimeout(this.#pollTimer);
    await this.#claims.idle();
    await this.#queue.onIdle();
    clearInterval(this.#heartbeat);
    clearInterval(this.#cancelWatch);
  }

  #schedulePoll(): void {
    clearTimeout(this.#pollTimer);
    if (this.#stopping.signal.aborted) return;
    this.#pollTimer = setTimeout(() => this.kick(), POLL_MS);
    this.#pollTimer.unref();
  }

  async #claimWhileFree(): Promise<void> {
    while (!this.#stopping.signal.aborted && this.#queue.size + this.#queue.pending < this.#queue.concurrency) {
      let split: Split | undefined;
      try {
        split = await this.#data.splits.claim(this.name, this.#leaseMs);
        this.#outage.answered();
      } catch (error) {
        this.#outage.failed(error);
        return;
      }
      if (!split) return;
      const claimed = split;
      const stop = new AbortController();
      this.#active.set(claimed.id, stop);
      void this.#queue.add(async () => {
        try {
          await this.#run(claimed, stop.signal);
        } finally {
          this.#active.delete(claimed.id);
          this.kick();
        }
      });
    }
  }

  async #run(split: Split, stop: AbortSignal): Promise<void> {
    if (split.attempts > MAX_ATTEMPTS) {
      const message = `the job was interrupted ${split.attempts - 1} times; it was stopped and refunded`;
      await this.#record(split.id, () => this.#fail(split, 'INTERNAL_ERROR', message));
      return;
    }
    const outcome = await this.#process(split, stop);
    if (outcome === 'lost') return;
    if (outcome.ok) {
      await this.#record(split.id, () => this.#succeed(split.id, outcome.stems, outcome.mixStems));
      // Cancelled as its last stem was written: the job failed, so its stems go.
      if ((await this.#data.splits.get(split.id).catch(() => undefined))?.errorCode === 'CANCELLED') await this.#removeStems(split.id);
      return;
    }
    await this.#removeStems(split.id);
    if (stop.aborted) {
      this.#options.log?.(`split ${split.id} was cancelled: its worker stopped and its files were removed`);
      return;
    }
    await this.#record(split.id, () => this.#fail(split, outcome.code, outcome.message));
  }

  #removeStems(splitId: string): Promise<void> {
    return rm(this.#data.layout.absolute(this.#data.layout.stemDir(splitId)), { recursive: true, force: true }).catch(() => undefined);
  }

  /** Runs the separation; decides the outcome but records nothing terminal. */
  async #process(
    split: Split,
    stop: AbortSignal,
  ): Promise<'lost' | { ok: true; stems: string[]; mixStems: readonly string[] | undefined } | { ok: false; code: JobErrorCode; message: string }> {
    let stage: JobErrorCode = 'SEPARATION_FAILED';
    try {
      const { ref, then } = this.#modelsOf(split);
      // Another worker took it between the claim and here (this one stalled past its lease).
      if (!(await this.#data.splits.markProcessing(split.id, this.name, then.then === undefined ? ref.name : split.modelName))) return 'lost';
      let lastPercent = -1;
      const outDir = this.#data.layout.absolute(this.#data.layout.stemDir(split.id));
      const source = this.#data.layout.absolute(split.sourcePath);
      if (!existsSync(source)) throw new StemsplitError('SOURCE_FETCH_FAILED', 'the source audio is no longer on the server');
      stage = 'AUDIO_DECODE_FAILED';
      const job = { inputPath: source, model: ref, ...this.#outputOf(split, isEnsembleRef(ref)), ...then, outDir };
      const started = Date.now();
      // The first progress comes once the worker has the model loaded (a first load may convert for minutes).
      let loadedAt: number | undefined;
      const result = await this.#splitter.split(
        job,
        ({ phase, percent }) => {
          loadedAt ??= Date.now();
          stage = phase === 'decode' ? 'AUDIO_DECODE_FAILED' : phase === 'separate' ? 'SEPARATION_FAILED' : 'ENCODE_FAILED';
          const whole = Math.floor(percent);
          if (whole !== lastPercent && whole < 100) {
            lastPercent = whole;
            void this.#recordProgress(split.id, whole);
          }
        },
        stop,
        (device, fellBackBecause) => {
          if (fellBackBecause !== undefined) this.#options.log?.(`split ${split.id}: the GPU failed (${fellBackBecause}); it starts over on the ${device}`);
          void this.#data.splits.setDevice(split.id, this.name, device).catch((error: unknown) => this.#outage.failed(error));
        },
      );
      // One line per finished job, so whoever runs the server sees the work it does.
      const finished = Date.now();
      this.#options.log?.(
        `split ${split.id} succeeded: ${result.durationSeconds.toFixed(1)} s of audio with ${ref.name} on ${result.device} in ${((finished - started) / 1000).toFixed(1)} s`,
      );
      // What an estimate needs: the split itself, not a model's one-time load or conversion.
      const splitSeconds = (finished - (loadedAt ?? started)) / 1000;
      // A chain's time is its steps' together, no one model's.
      if (then.then === undefined)
        await this.#data.modelTimings.record(ref.name, splitSeconds, result.durationSeconds).catch((error: unknown) => this.#outage.failed(error));
      return { ok: true, stems: Object.keys(result.stems), mixStems: result.mixStems };
    } catch (error) {
      if (stop.aborted) return { ok: false, code: 'CANCELLED', message: describeError(error) };
      const code: JobErrorCode = isDiskFull(error) ? 'STORAGE_FAILED' : ((isStemsplitError(error) ? jobErrorCodeOf(error.code) : undefined) ?? stage);
      this.#options.log?.(`split ${split.id} failed: ${describeError(error)}`);
      return { ok: false, code, message: describeError(error) };
    }
  }

  /**
   * The model a job named, or its chain's first step and the steps after it (the ensemble method
   * of each as the job asked), as installed now.
   */
  #modelsOf(split: Split): { ref: ModelChoice; then: Pick<SplitJob, 'then' | 'keepIntermediate' | 'ensemble'> } {
    const { modelOptions, chain, keepIntermediate } = parseJobOptions(split.jobOptions);
    const options = modelOptions ? familyOptionsFrom(modelOptions) : undefined;
    if (chain === undefined) return { ref: this.#modelOf(split.modelName, () => this.#registry.resolve(split.modelName, undefined, options)), then: {} };
    const steps = chain.map((step) => {
      const name = step.models?.join('+') ?? (step.model as string);
      const ref = this.#modelOf(name, () =>
        step.models ? this.#registry.resolveEnsemble(step.models, options) : this.#registry.resolve(name, undefined, options),
      );
      const ensemble = isEnsembleRef(ref)
        ? {
            ensemble: {
              algorithm: (step.ensemble ?? DEFAULT_ENSEMBLE_ALGORITHM) as EnsembleMethod['algorithm'],
              ...(step.ensembleWeights ? { weights: step.ensembleWeights } : {}),
            },
          }
        : {};
      return { input: step.input as string, model: ref, ...ensemble };
    });
    const [first, ...later] = steps as [ChainStepRef, ...ChainStepRef[]];
    return {
      ref: first.model,
      then: { ...(first.ensemble ? { ensemble: first.ensemble } : {}), then: later, ...(keepIntermediate ? { keepIntermediate } : {}) },
    };
  }

  /** A model the job named, as installed now; one removed since the job was made fails it in words its client understands. */
  #modelOf(name: string, resolve: () => ModelChoice): ModelChoice {
    try {
      return resolve();
    } catch (error) {
      const why =
        isStemsplitError(error) && error.code === 'MODEL_NOT_FOUND' ? 'is no longer installed on this server' : `cannot be loaded: ${describeError(error)}`;
      throw new StemsplitError(
        isStemsplitError(error) ? error.code : 'MODEL_INVALID',
        `the model ${name} that this job asked for ${why}; the credits were refunded`,
        { cause: error },
      );
    }
  }

  /** What the job asked to be written (split-request/'s output, as the worker takes it) and its ensemble method (decided when it was made; a row from before then: avg_wave). */
  #outputOf(split: Split, ensembled: boolean): Omit<SplitJob, 'inputPath' | 'model' | 'outDir'> {
    const options = parseJobOptions(split.jobOptions);
    const method: EnsembleMethod = {
      algorithm: options.ensemble ?? DEFAULT_ENSEMBLE_ALGORITHM,
      ...(options.ensembleWeights ? { weights: options.ensembleWeights } : {}),
    };
    return { ...(ensembled ? { ensemble: method } : {}), ...stemOutputOf({ ...options, outputFormat: split.outputFormat }) };
  }

  /**
   * Writes a job's outcome, retrying while the database cannot take it: the stems are on disk
   * and the lease keeps being renewed, so nothing is run again. A runner stopped meanwhile
   * leaves the job to the next one, once its lease lapses.
   */
  async #record(splitId: string, write: () => Promise<void>): Promise<void> {
    for (;;) {
      try {
        await write();
        this.#outage.answered();
        return;
      } catch (error) {
        this.#outage.failed(error);
        try {
          await sleep(RECORD_RETRY_MS, undefined, { signal: this.#stopping.signal });
        } catch {
          return;
        }
      }
    }
  }

  /** Progress is best effort: the job's outcome reports trouble with the database. */
  async #recordProgress(splitId: string, percent: number): Promise<void> {
    try {
      await this.#data.splits.setProgress(splitId, this.name, percent);
      this.#outage.answered();
    } catch (error) {
      this.#outage.failed(error);
    }
  }

  async #renewLeases(): Promise<void> {
    for (const id of this.#active.keys()) {
      try {
        if (!(await this.#data.splits.renewLease(id, this.name, this.#leaseMs))) {
          this.#options.log?.(`split ${id}: this worker's lease lapsed and another took the job; this run's outcome will not count`);
        }
      } catch (error) {
        this.#outage.failed(error);
      }
    }
  }

  async #succeed(splitId: string, stems: readonly string[], mixStems: readonly string[] | undefined): Promise<void> {
    const finished = await this.#data.store.transaction(async () => {
      if (!(await this.#data.splits.markSucceeded(splitId, this.name, stems, mixStems))) return undefined;
      const split = (await this.#data.splits.get(splitId)) as Split;
      await queueWebhook(this.#data, split, this.#present);
      return split;
    });
    if (finished) this.#options.onTerminal?.(finished);
  }

  async #fail(split: Split, code: JobErrorCode, message: string): Promise<void> {
    const finished = await this.#data.store.transaction(async () => {
      if (!(await this.#data.splits.markFailed(split.id, this.name, code, message))) return undefined;
      return refundAndAnnounce(this.#data, split, this.#present);
    });
    if (finished) this.#options.onTerminal?.(finished);
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
