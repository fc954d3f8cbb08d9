/**
 * stemsplit's VR resamplers (src/vr/resample*.ts) against the libraries they reproduce, on the
 * reference outputs scripts/bench/vr_resamplers_ref.py writes (librosa 0.11's resample over
 * libsamplerate, resampy, python-soxr and scipy; run outside the project):
 *
 *   python3 scripts/bench/vr_resamplers_ref.py /tmp/vr-resamplers
 *   node --import tsx scripts/bench/vr-resamplers.ts /tmp/vr-resamplers
 *
 * Prints per case (res_type, rates, input dtype, signal) the SNR of stemsplit's output against the
 * library's over the whole output and over its first and last 50 ms, and the lengths.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { librosaResample, type LibrosaResType } from '../../src/vr/resample.js';

interface Case {
  readonly name: string;
  readonly resType: LibrosaResType;
  readonly from: number;
  readonly to: number;
  readonly dtype: 'float32' | 'float64';
  readonly signal: string;
  readonly outLength: number;
}

function readF64(file: string): Float64Array {
  const bytes = readFileSync(file);
  return new Float64Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
}

function snrDb(reference: Float64Array, output: Float64Array, from: number, to: number): number {
  let signal = 0;
  let noise = 0;
  for (let i = from; i < to; i++) {
    const r = reference[i] as number;
    signal += r * r;
    noise += (r - (output[i] as number)) ** 2;
  }
  return noise === 0 ? Infinity : 10 * Math.log10(signal / noise);
}

const dir = process.argv[2];
if (dir === undefined) throw new Error('usage: vr-resamplers.ts REFERENCE_DIR');
const cases = JSON.parse(readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as Case[];
console.log('case | length (stemsplit/library) | SNR all | first 50 ms | last 50 ms | seconds');
for (const c of cases) {
  const input = readF64(path.join(dir, `${c.name}.in.f64`));
  const reference = readF64(path.join(dir, `${c.name}.out.f64`));
  const started = performance.now();
  const output = librosaResample(input, c.from, c.to, c.resType, c.dtype === 'float32');
  const seconds = (performance.now() - started) / 1000;
  const edge = Math.round(0.05 * c.to);
  const n = Math.min(output.length, reference.length);
  const figures = [snrDb(reference, output, 0, n), snrDb(reference, output, 0, edge), snrDb(reference, output, n - edge, n)].map((v) => v.toFixed(1));
  console.log(`${c.resType} ${c.from}->${c.to} ${c.dtype} ${c.signal} | ${output.length}/${reference.length} | ${figures.join(' | ')} | ${seconds.toFixed(2)}`);
}
