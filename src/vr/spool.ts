/**
 * The disk a `reverse` params file needs to stream (stream.ts): its computation runs from the
 * track's end, so the track is copied to a raw file it can read backwards, and the stems, made
 * from the end backwards, are written into raw files and read forwards once they are whole.
 * Each file is interleaved stereo float32, 8 bytes a sample: the track's and two stems', 24 bytes
 * a sample in all (about 1.9 GB for 30 minutes at 44.1 kHz), in a folder of the system's
 * temporary directory removed when the separation ends, however it ends (after a SIGKILL, by the
 * next reverse split on the machine).
 */
import { mkdtemp, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StemsplitError } from '../errors.js';
import type { StemWriter } from '../separation/track-stream.js';
import type { StereoWave } from './spectrogram.js';

const BYTES_PER_FRAME = 8;
const REPLAY_FRAMES = 1 << 16;

const SPOOL_PREFIX = 'stemsplit-vr-reverse-';

/** A worker killed outright (SIGKILL, power loss) cannot remove its spool: the next one does, by the pid in its name. */
async function removeSpoolsOfEndedProcesses(): Promise<void> {
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    const pid = Number(/^stemsplit-vr-reverse-(\d+)-/.exec(name)?.[1]);
    if (pid > 0 && !isRunning(pid)) await rm(join(tmpdir(), name), { recursive: true, force: true }).catch(() => undefined);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A folder of raw files, removed by `remove`. */
export class Spool {
  private constructor(readonly dir: string) {}

  static async create(): Promise<Spool> {
    await removeSpoolsOfEndedProcesses();
    return new Spool(await mkdtemp(join(tmpdir(), `${SPOOL_PREFIX}${process.pid}-`)));
  }

  /** The whole stream copied into a file, to be read in any order. */
  async track(frames: AsyncIterable<Float32Array>, length: number, signal: AbortSignal | undefined): Promise<RawTrack> {
    const file = await open(join(this.dir, 'track.f32'), 'w+');
    let written = 0;
    for await (const block of frames) {
      signal?.throwIfAborted();
      const count = block.length / 2;
      if (written + count > length) {
        await file.close();
        throw new StemsplitError('AUDIO_DECODE_FAILED', `the audio gave more than ${length} samples`);
      }
      await file.write(new Uint8Array(block.buffer, block.byteOffset, block.byteLength), 0, block.byteLength, written * BYTES_PER_FRAME);
      written += count;
    }
    if (written !== length) {
      await file.close();
      throw new StemsplitError('AUDIO_DECODE_FAILED', `the audio gave only ${written} of ${length} samples`);
    }
    return new RawTrack(file, length);
  }

  /** Stems of `length` samples, written block by block in any order. */
  async stems(count: number, length: number): Promise<StemFiles> {
    const files: FileHandle[] = [];
    for (let s = 0; s < count; s++) files.push(await open(join(this.dir, `stem${s}.f32`), 'w+'));
    return new StemFiles(files, length);
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** The track in a raw file: samples [start, end) of each channel, zeros outside the track. */
export class RawTrack {
  constructor(
    private readonly file: FileHandle,
    readonly length: number,
  ) {}

  async read(start: number, end: number): Promise<StereoWave> {
    const out: StereoWave = [new Float64Array(end - start), new Float64Array(end - start)];
    const lo = Math.max(0, start);
    const hi = Math.min(this.length, end);
    if (hi <= lo) return out;
    const bytes = new Uint8Array((hi - lo) * BYTES_PER_FRAME);
    await this.file.read(bytes, 0, bytes.byteLength, lo * BYTES_PER_FRAME);
    const frames = new Float32Array(bytes.buffer);
    for (let i = 0; i < hi - lo; i++) {
      out[0][lo - start + i] = frames[2 * i] as number;
      out[1][lo - start + i] = frames[2 * i + 1] as number;
    }
    return out;
  }

  close(): Promise<void> {
    return this.file.close();
  }
}

/** Stem files: blocks written at their place, then the stems read forwards into a StemWriter. */
export class StemFiles {
  constructor(
    private readonly files: readonly FileHandle[],
    private readonly length: number,
  ) {}

  /** Samples [start, start + frames) of every stem, planar [2, frames] each. */
  async put(planes: readonly Float32Array[], start: number, frames: number): Promise<void> {
    for (const [s, file] of this.files.entries()) {
      const plane = planes[s] as Float32Array;
      const interleaved = new Float32Array(2 * frames);
      for (let i = 0; i < frames; i++) {
        interleaved[2 * i] = plane[i] as number;
        interleaved[2 * i + 1] = plane[frames + i] as number;
      }
      await file.write(new Uint8Array(interleaved.buffer), 0, interleaved.byteLength, start * BYTES_PER_FRAME);
    }
  }

  /** Every stem from its start, in blocks, checking `signal` between them. */
  async replay(write: StemWriter, signal: AbortSignal | undefined): Promise<void> {
    for (let start = 0; start < this.length; start += REPLAY_FRAMES) {
      signal?.throwIfAborted();
      const frames = Math.min(REPLAY_FRAMES, this.length - start);
      const planes: Float32Array[] = [];
      for (const file of this.files) {
        const bytes = new Uint8Array(frames * BYTES_PER_FRAME);
        await file.read(bytes, 0, bytes.byteLength, start * BYTES_PER_FRAME);
        const interleaved = new Float32Array(bytes.buffer);
        const plane = new Float32Array(2 * frames);
        for (let i = 0; i < frames; i++) {
          plane[i] = interleaved[2 * i] as number;
          plane[frames + i] = interleaved[2 * i + 1] as number;
        }
        planes.push(plane);
      }
      await write(planes, frames);
    }
  }

  async close(): Promise<void> {
    for (const file of this.files) await file.close();
  }
}
