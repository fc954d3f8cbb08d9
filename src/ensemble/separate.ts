/**
 * Running an ensemble's members over one track in bounded memory: one after another, each
 * member but the last streams the track (decoded again for it) and writes what it gives each
 * ensemble stem to a float32 spool file in the split's staging folder; the last member then
 * streams the track too, and each of its blocks is combined with the same stretch read back
 * from the spools and goes on to the encoders. Memory is one member's (models run one at a
 * time, blocks stay segment-sized); disk is the spools: 8 bytes a sample (stereo float32) per
 * stem each member but the last takes part in (`spoolBytes`), removed when the last member is
 * done, and with the staging folder on failure or cancel.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isStemsplitError, StemsplitError } from '../errors.js';
import type { EnsembleMethod } from './algorithms.js';
import { stemCombiner } from './combine.js';
import type { StemCombiner } from './stem-combiner.js';
import { ensemblePlan, memberParts, sumSources, type EnsemblePlan } from './plan.js';
import { separateStream, type StemWriter, type TrackStatistics } from '../separation/index.js';
import type { SeparationModel } from '../separation/model.js';
import { SpoolFile } from '../separation/spool.js';

/** Several loaded models combined into one set of stems. */
export interface Ensemble {
  /** The members' names joined by `+`. */
  readonly name: string;
  readonly members: readonly SeparationModel[];
  readonly method: EnsembleMethod;
}

export function isEnsemble(model: SeparationModel | Ensemble): model is Ensemble {
  return 'members' in model;
}

/** The rate every member runs at; members at different rates cannot be combined sample by sample. */
export function ensembleSampleRate(ensemble: Ensemble): number {
  const rates = new Set(ensemble.members.map((member) => member.sampleRate));
  if (rates.size > 1) {
    const each = ensemble.members.map((member) => `${member.name}: ${member.sampleRate} Hz`).join(', ');
    throw new StemsplitError('USAGE', `the models of an ensemble must run at one sample rate (${each})`);
  }
  return ensemble.members[0]?.sampleRate as number;
}

export function planOf(ensemble: Ensemble, twoStems: string | undefined): EnsemblePlan {
  return ensemblePlan(
    ensemble.members.map((member) => ({ name: member.name, sources: member.sources })),
    twoStems,
  );
}

/** Bytes of spool a track of `length` samples needs: every part of every member but the last, stereo float32. */
export function spoolBytes(plan: EnsemblePlan, members: number, length: number): number {
  const spooled = plan.parts.flat().filter((part) => part.member < members - 1).length;
  return spooled * length * 2 * 4;
}

export interface EnsembleTrack {
  readonly length: number;
  readonly statistics: TrackStatistics;
  /** A fresh decode of the track at the members' rate (called once per member). */
  readonly frames: () => AsyncIterable<Float32Array>;
}

export interface EnsembleRunOptions {
  readonly shifts?: number;
  readonly overlap?: number;
  readonly signal?: AbortSignal;
  /** 0 → 1 over all members. */
  readonly onProgress?: (fraction: number) => void;
}

/** Runs every member and hands `write` the ensemble's stems (planar [2, n] each, in plan order). */
export async function separateEnsemble(
  ensemble: Ensemble,
  plan: EnsemblePlan,
  track: EnsembleTrack,
  spoolDir: string,
  write: StemWriter,
  options: EnsembleRunOptions,
): Promise<void> {
  const count = ensemble.members.length;
  const weights = ensemble.method.weights ?? ensemble.members.map(() => 1);
  await mkdir(spoolDir, { recursive: true });
  const spool = (stem: number, member: number) => join(spoolDir, `member${member}-stem${stem}.f32`);
  const run = async (member: number, onBlock: StemWriter): Promise<void> => {
    const model = ensemble.members[member] as SeparationModel;
    try {
      await separateStream(model, { length: track.length, statistics: track.statistics, frames: track.frames(), reread: track.frames }, onBlock, {
        ...(options.shifts !== undefined ? { shifts: options.shifts } : {}),
        ...(options.overlap !== undefined ? { overlap: options.overlap } : {}),
        ...(options.signal ? { signal: options.signal } : {}),
        onProgress: ({ done, total }) => options.onProgress?.((member + done / total) / count),
      });
    } catch (error) {
      // A member's file failing as it runs (an .onnx graph) says which member, as a member failing to load does.
      if (isStemsplitError(error) && error.code === 'MODEL_INVALID')
        throw new StemsplitError('MODEL_INVALID', `ensemble member ${member + 1} of ${count}, model ${model.name} failed as it ran: ${error.message}`, {
          cause: error,
        });
      throw error;
    }
  };

  for (let member = 0; member < count - 1; member++) {
    options.signal?.throwIfAborted();
    const parts = memberParts(plan, member);
    const writers = await Promise.all(parts.map((part) => SpoolFile.create(spool(part.stem, member))));
    try {
      await run(member, async (blocks, frames) => {
        for (const [index, part] of parts.entries()) await (writers[index] as SpoolFile).append(sumSources(blocks, part.sources, frames), frames);
      });
    } finally {
      await Promise.all(writers.map((writer) => writer.close()));
    }
  }

  options.signal?.throwIfAborted();
  const last = count - 1;
  const readers = await Promise.all(
    plan.parts.map((parts, stem) => Promise.all(parts.map((part) => (part.member === last ? undefined : SpoolFile.read(spool(stem, part.member)))))),
  );
  try {
    const combiners: StemCombiner[] = plan.parts.map((parts) =>
      stemCombiner(
        ensemble.method.algorithm,
        parts.map((part) => weights[part.member] as number),
        track.length,
      ),
    );
    const aligned = new AlignedOutput(plan.stems.length);
    await run(last, async (blocks, frames) => {
      for (const [stem, parts] of plan.parts.entries()) {
        const inputs: Float32Array[] = [];
        for (const [index, part] of parts.entries()) {
          const reader = readers[stem]?.[index];
          inputs.push(reader ? await reader.take(frames) : sumSources(blocks, part.sources, frames));
        }
        aligned.add(stem, (combiners[stem] as StemCombiner).push(inputs, frames));
      }
      await aligned.flush(write);
    });
    for (const [stem, combiner] of combiners.entries()) aligned.add(stem, combiner.finish());
    await aligned.flush(write);
    if (aligned.written !== track.length) throw new Error(`the ensemble wrote ${aligned.written} of ${track.length} samples`);
  } finally {
    await Promise.all(readers.flat().map((reader) => reader?.close()));
  }
  await rm(spoolDir, { recursive: true, force: true });
}

/**
 * Settled output per stem, handed on as far as every stem has settled: a spectral stem holds
 * back up to a frame while a stem made by one member passes at once.
 */
class AlignedOutput {
  readonly #pending: Float32Array[];
  written = 0;

  constructor(stems: number) {
    this.#pending = Array.from({ length: stems }, () => new Float32Array(0));
  }

  add(stem: number, planar: Float32Array): void {
    if (planar.length === 0) return;
    const held = this.#pending[stem] as Float32Array;
    const a = held.length / 2;
    const b = planar.length / 2;
    const joined = new Float32Array(2 * (a + b));
    joined.set(held.subarray(0, a), 0);
    joined.set(planar.subarray(0, b), a);
    joined.set(held.subarray(a), a + b);
    joined.set(planar.subarray(b), 2 * a + b);
    this.#pending[stem] = joined;
  }

  async flush(write: StemWriter): Promise<void> {
    const frames = Math.min(...this.#pending.map((planar) => planar.length / 2));
    if (frames === 0) return;
    const out = this.#pending.map((planar, stem) => {
      const held = planar.length / 2;
      const head = new Float32Array(2 * frames);
      head.set(planar.subarray(0, frames), 0);
      head.set(planar.subarray(held, held + frames), frames);
      const rest = new Float32Array(2 * (held - frames));
      rest.set(planar.subarray(frames, held), 0);
      rest.set(planar.subarray(held + frames), held - frames);
      this.#pending[stem] = rest;
      return head;
    });
    this.written += frames;
    await write(out, frames);
  }
}
