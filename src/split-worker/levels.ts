/**
 * The stems' levels on their way to the encoders (audio/levels.ts says what each option does).
 * Clamp acts block by block. Rescale and normalize need each stem's peak before its first
 * sample is written, so the stems are spooled first (stereo float32 in the staging folder,
 * 8 bytes a frame a stem: `levelSpoolBytes`), their peaks measured as they arrive, and then
 * read back a block at a time into their encoders with their gains: memory stays a block.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { StemEncoder } from '../audio/encode.js';
import { leveled, needsPeak, peakOf, stemGain, type LevelOptions } from '../audio/levels.js';
import { SpoolFile } from '../separation/spool.js';

/** Frames read back from a spool at a time. */
const BLOCK_FRAMES = 65_536;

export interface LeveledStems {
  /** One planar [2, frames] block of each stem, in the encoders' order. */
  write(planes: readonly Float32Array[], frames: number): Promise<void>;
  /** Hands the encoders what they still lack (the spooled stems, leveled); `onProgress` 0 → 1. */
  drain(onProgress: (fraction: number) => void): Promise<void>;
  /** Closes the spools of a split that failed (the staging folder holding them is removed). */
  abort(): Promise<void>;
}

/** Disk the spools take for `stems` stems of `frames` frames, where the levels need them. */
export function levelSpoolBytes(levels: LevelOptions, stems: number, frames: number): number {
  return needsPeak(levels) ? stems * frames * 2 * 4 : 0;
}

/** Leads the stems to `encoders` with `levels` applied, spooling them in `spoolDir` where a peak is needed. */
export async function openLeveledStems(encoders: readonly StemEncoder[], spoolDir: string, levels: LevelOptions): Promise<LeveledStems> {
  if (!needsPeak(levels)) {
    return {
      write: async (planes, frames) => {
        await Promise.all(encoders.map((encoder, index) => encoder.write(leveled(planes[index] as Float32Array, 1, levels), frames)));
      },
      drain: async () => undefined,
      abort: async () => undefined,
    };
  }
  await mkdir(spoolDir, { recursive: true });
  const paths = encoders.map((_, index) => join(spoolDir, `stem${index}.f32`));
  const spools = await Promise.all(paths.map((path) => SpoolFile.create(path)));
  const peaks = encoders.map(() => 0);
  let total = 0;
  return {
    async write(planes, frames) {
      for (const [index, spool] of spools.entries()) {
        const plane = planes[index] as Float32Array;
        peaks[index] = Math.max(peaks[index] as number, peakOf(plane, 2 * frames));
        await spool.append(plane, frames);
      }
      total += frames;
    },
    async drain(onProgress) {
      await Promise.all(spools.map((spool) => spool.close()));
      for (const [index, encoder] of encoders.entries()) {
        const gain = stemGain(peaks[index] as number, levels);
        const reader = await SpoolFile.read(paths[index] as string);
        try {
          for (let done = 0; done < total; done += BLOCK_FRAMES) {
            const frames = Math.min(BLOCK_FRAMES, total - done);
            await encoder.write(leveled(await reader.take(frames), gain, levels), frames);
            onProgress((index + (done + frames) / total) / encoders.length);
          }
        } finally {
          await reader.close();
        }
        await rm(paths[index] as string, { force: true });
      }
      await rm(spoolDir, { recursive: true, force: true });
    },
    async abort() {
      await Promise.all(spools.map((spool) => spool.close().catch(() => undefined)));
    },
  };
}
