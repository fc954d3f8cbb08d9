/**
 * A stem spooled to disk in the split's staging folder, for what must see all of it before it
 * is written: an ensemble's members but the last (ensemble.ts), a stem's level (levels.ts).
 */
import { open, type FileHandle } from 'node:fs/promises';

/** Stereo float32 frames, interleaved, appended by one writer and read back in order. */
export class SpoolFile {
  readonly #handle: FileHandle;
  #position = 0;

  private constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  static async create(path: string): Promise<SpoolFile> {
    return new SpoolFile(await open(path, 'w'));
  }

  static async read(path: string): Promise<SpoolFile> {
    return new SpoolFile(await open(path, 'r'));
  }

  async append(planar: Float32Array, frames: number): Promise<void> {
    const interleaved = new Float32Array(2 * frames);
    for (let i = 0; i < frames; i++) {
      interleaved[2 * i] = planar[i] as number;
      interleaved[2 * i + 1] = planar[frames + i] as number;
    }
    await this.#handle.write(new Uint8Array(interleaved.buffer), 0, interleaved.byteLength, this.#position);
    this.#position += interleaved.byteLength;
  }

  /** The next `frames` frames, planar [2, frames]. */
  async take(frames: number): Promise<Float32Array> {
    const bytes = new Uint8Array(8 * frames);
    const { bytesRead } = await this.#handle.read(bytes, 0, bytes.byteLength, this.#position);
    if (bytesRead !== bytes.byteLength) throw new Error(`a spool ended early (${this.#position + bytesRead} bytes)`);
    this.#position += bytesRead;
    const interleaved = new Float32Array(bytes.buffer);
    const planar = new Float32Array(2 * frames);
    for (let i = 0; i < frames; i++) {
      planar[i] = interleaved[2 * i] as number;
      planar[frames + i] = interleaved[2 * i + 1] as number;
    }
    return planar;
  }

  close(): Promise<void> {
    return this.#handle.close();
  }
}
