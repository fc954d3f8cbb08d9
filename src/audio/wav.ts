/**
 * A small WAV writer: RIFF/WAVE, stereo, 16-bit PCM or 32-bit IEEE float.
 * Writing WAV needs no codec, so it skips ffmpeg entirely.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { endianness } from 'node:os';

export type WavSampleFormat = 'pcm16' | 'float32';

const CHANNELS = 2;
// Typed-array views write host byte order; WAV and f32le are little-endian.
if (endianness() !== 'LE') throw new Error('stemsplit audio I/O needs a little-endian host');
/** Frames converted per write: bounded memory (256 KiB of float32 stereo), few syscalls. */
const FRAMES_PER_WRITE = 32_768;

export function wavHeader(frames: number, sampleRate: number, format: WavSampleFormat, channels = CHANNELS): Buffer {
  const isFloat = format === 'float32';
  const bytesPerSample = isFloat ? 4 : 2;
  const dataBytes = frames * channels * bytesPerSample;
  // Non-PCM formats carry a cbSize field and a `fact` chunk (frames per channel), as the WAVE spec asks.
  const fmtBytes = isFloat ? 18 : 16;
  const factBytes = isFloat ? 12 : 0;
  const header = Buffer.alloc(12 + 8 + fmtBytes + factBytes + 8);
  let at = 0;
  at += header.write('RIFF', at, 'ascii');
  at = header.writeUInt32LE(4 + 8 + fmtBytes + factBytes + 8 + dataBytes, at);
  at += header.write('WAVE', at, 'ascii');
  at += header.write('fmt ', at, 'ascii');
  at = header.writeUInt32LE(fmtBytes, at);
  at = header.writeUInt16LE(isFloat ? 3 : 1, at);
  at = header.writeUInt16LE(channels, at);
  at = header.writeUInt32LE(sampleRate, at);
  at = header.writeUInt32LE(sampleRate * channels * bytesPerSample, at);
  at = header.writeUInt16LE(channels * bytesPerSample, at);
  at = header.writeUInt16LE(bytesPerSample * 8, at);
  if (isFloat) {
    at = header.writeUInt16LE(0, at);
    at += header.write('fact', at, 'ascii');
    at = header.writeUInt32LE(4, at);
    at = header.writeUInt32LE(frames, at);
  }
  at += header.write('data', at, 'ascii');
  header.writeUInt32LE(dataBytes, at);
  return header;
}

/** Bytes per interleaved stereo frame of each sample encoding. */
export function bytesPerFrame(format: WavSampleFormat | 'f32le'): number {
  return CHANNELS * (format === 'pcm16' ? 2 : 4);
}

/**
 * Interleaves frames [start, start + count) of a planar stereo buffer into `out`
 * (which must be a `Buffer.alloc` buffer, so its offset is aligned) as little-endian samples.
 */
export function interleaveFrames(planar: Float32Array, length: number, start: number, count: number, format: WavSampleFormat | 'f32le', out: Buffer): Buffer {
  const left = planar.subarray(start, start + count);
  const right = planar.subarray(length + start, length + start + count);
  if (format === 'pcm16') {
    const samples = new Int16Array(out.buffer, out.byteOffset, count * CHANNELS);
    for (let frame = 0; frame < count; frame++) {
      samples[2 * frame] = toPcm16(left[frame] ?? 0);
      samples[2 * frame + 1] = toPcm16(right[frame] ?? 0);
    }
  } else {
    const samples = new Float32Array(out.buffer, out.byteOffset, count * CHANNELS);
    for (let frame = 0; frame < count; frame++) {
      samples[2 * frame] = left[frame] ?? 0;
      samples[2 * frame + 1] = right[frame] ?? 0;
    }
  }
  return out.subarray(0, count * bytesPerFrame(format));
}

/** Scales by 2^15 like ffmpeg and every decoder (which divide by 32768), rounds, and clips to the int16 range. */
function toPcm16(sample: number): number {
  const scaled = Math.round(sample * 32768);
  return scaled > 32767 ? 32767 : scaled < -32768 ? -32768 : scaled;
}

export async function writeWavTo(file: FileHandle, planar: Float32Array, length: number, sampleRate: number, format: WavSampleFormat): Promise<void> {
  await file.write(wavHeader(length, sampleRate, format));
  const scratch = Buffer.alloc(FRAMES_PER_WRITE * bytesPerFrame(format));
  for (let start = 0; start < length; start += FRAMES_PER_WRITE) {
    const count = Math.min(FRAMES_PER_WRITE, length - start);
    await file.write(interleaveFrames(planar, length, start, count, format, scratch));
  }
}

/** A WAV file's layout as its header states it: enough to stream its data back (a chain's intermediate stems). */
export interface WavLayout {
  readonly channels: number;
  readonly sampleRate: number;
  readonly frames: number;
}

/** Reads a WAV file's `fmt ` and `data` chunks (the first 64 KiB, where any writer puts them). */
export async function readWavLayout(path: string): Promise<WavLayout> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(65_536);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    if (bytesRead < 12 || head.toString('ascii', 0, 4) !== 'RIFF' || head.toString('ascii', 8, 12) !== 'WAVE') throw new Error(`${path} is not a WAV file`);
    let channels = 0;
    let sampleRate = 0;
    let blockAlign = 0;
    for (let at = 12; at + 8 <= bytesRead; ) {
      const id = head.toString('ascii', at, at + 4);
      const size = head.readUInt32LE(at + 4);
      if (id === 'fmt ') {
        channels = head.readUInt16LE(at + 10);
        sampleRate = head.readUInt32LE(at + 12);
        blockAlign = head.readUInt16LE(at + 20);
      } else if (id === 'data') {
        if (blockAlign === 0) break;
        const total = (await file.stat()).size - (at + 8);
        // A writer that could not seek back leaves the size unset: the rest of the file is the data.
        const bytes = size === 0 || size === 0xffffffff ? total : Math.min(size, total);
        return { channels, sampleRate, frames: Math.floor(bytes / blockAlign) };
      }
      at += 8 + size + (size % 2);
    }
    throw new Error(`${path}: no fmt and data chunks in its first 64 KiB`);
  } finally {
    await file.close();
  }
}
