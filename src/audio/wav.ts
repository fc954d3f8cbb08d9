/**
 * A small WAV writer: RIFF/WAVE, stereo, 16-bit PCM or 32-bit IEEE float.
 * Writing WAV needs no codec, so it skips ffmpeg entirely.
 */
import type { FileHandle } from 'node:fs/promises';
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
export function interleaveFrames(
  planar: Float32Array,
  length: number,
  start: number,
  count: number,
  format: WavSampleFormat | 'f32le',
  out: Buffer,
): Buffer {
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

export async function writeWavTo(
  file: FileHandle,
  planar: Float32Array,
  length: number,
  sampleRate: number,
  format: WavSampleFormat,
): Promise<void> {
  await file.write(wavHeader(length, sampleRate, format));
  const scratch = Buffer.alloc(FRAMES_PER_WRITE * bytesPerFrame(format));
  for (let start = 0; start < length; start += FRAMES_PER_WRITE) {
    const count = Math.min(FRAMES_PER_WRITE, length - start);
    await file.write(interleaveFrames(planar, length, start, count, format, scratch));
  }
}
