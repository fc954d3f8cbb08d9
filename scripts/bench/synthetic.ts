/**
 * What the benchmarks of full-size networks share (no download): seeded random weights, a
 * synthetic track, running the bench in a process of its own as serve and split run models, and the
 * measured demix with its report (time per chunk and per minute, where the time goes, RSS).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DemixRunOptions } from '../../src/msst/network.js';
import { ortProcessEnv, type AllocatorProfile } from '../../src/onnx/process-env.js';
import type { StageFile } from '../../src/onnx/stages.js';
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import type { RssSampler } from './rss.js';

/** Seeded N(0, scale²) values (Box-Muller over a 32-bit LCG), `mean` added: weights that keep activations in range. */
export function randomTensor(shape: readonly number[], scale: number, state: { seed: number }, mean = 0): CheckpointTensor {
  const count = shape.reduce((a, b) => a * b, 1);
  const data = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    state.seed = (Math.imul(state.seed, 1664525) + 1013904223) >>> 0;
    const u = (state.seed + 1) / 4294967297;
    state.seed = (Math.imul(state.seed, 1664525) + 1013904223) >>> 0;
    const v = state.seed / 4294967296;
    const r = Math.sqrt(-2 * Math.log(u)) * scale;
    data[i] = mean + r * Math.cos(2 * Math.PI * v);
    if (i + 1 < count) data[i + 1] = mean + r * Math.sin(2 * Math.PI * v);
  }
  return { shape, data };
}

/**
 * `seconds` of planar "music": two detuned tones, a bass, noise bursts, and a noise floor about
 * 50 dB down. The floor matters to the benches that compare stems with the official code: between
 * the bursts, pure tones leave most frequency bands near zero, which RMSNorm (the RoFormers) blows
 * up in float32 on either side, so the fidelity column measured float32 noise, not the port (issue 49).
 */
export function benchTrack(seconds: number, rate: number, channels: number): Float32Array {
  const length = Math.round(seconds * rate);
  const data = new Float32Array(channels * length);
  let noise = 7;
  for (let c = 0; c < channels; c++) {
    for (let i = 0; i < length; i++) {
      const t = i / rate;
      noise = (Math.imul(noise, 1664525) + 1013904223) >>> 0;
      const white = noise / 4294967296 - 0.5;
      const burst = (t * 4) % 1 < 0.1 ? white * 0.3 : 0;
      const floor = white * 0.006;
      data[c * length + i] = 0.2 * Math.sin(2 * Math.PI * (220 + c) * t) + 0.2 * Math.sin(2 * Math.PI * 55 * t) + burst + floor;
    }
  }
  return data;
}

/** What a `--build-only` child wrote: the stage files and the parameter count. */
export interface BuiltNetwork {
  readonly millions: string;
  readonly stages: StageFile[];
}

/** The `--build-only` child's answer on stdout (millions of parameters with `digits` decimals); then it exits. */
export function answerBuilt(state: ReadonlyMap<string, CheckpointTensor>, stages: StageFile[], digits = 1): never {
  const parameters = [...state.values()].reduce((sum, t) => sum + t.data.length, 0);
  process.stdout.write(JSON.stringify({ millions: (parameters / 1e6).toFixed(digits), stages }));
  process.exit(0);
}

/** Runs `script` with `args` (which pass `--build-only DIR`) in a child process, so the measured process holds no weights of its own. */
export function buildInChild(script: string, args: readonly string[]): BuiltNetwork {
  return JSON.parse(execFileSync(process.execPath, ['--import', 'tsx', script, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 })) as BuiltNetwork;
}

/** The weights for PyTorch: one raw float32 file `blob` and weights.json, an index of names, shapes and offsets. */
export function writeWeightBlob(state: ReadonlyMap<string, CheckpointTensor>, directory: string, blob: string): void {
  const index: { name: string; shape: readonly number[]; offset: number }[] = [];
  const all = new Float32Array([...state.values()].reduce((sum, tensor) => sum + tensor.data.length, 0));
  let offset = 0;
  for (const [name, tensor] of state) {
    index.push({ name, shape: tensor.shape, offset });
    all.set(tensor.data, offset);
    offset += tensor.data.length;
  }
  writeFileSync(path.join(directory, blob), all);
  writeFileSync(path.join(directory, 'weights.json'), JSON.stringify(index));
}

/** Set in the process `rerunAsSplitWorker` starts. */
const SPLIT_WORKER_RERUN = 'STEMSPLIT_BENCH_AS_WORKER';

/** Whether this process is the rerun `rerunAsSplitWorker` started (it measures as the split worker runs). */
export function runningAsSplitWorker(): boolean {
  return process.env[SPLIT_WORKER_RERUN] === '1';
}

/** The names `rerunAsSplitWorker` added to the environment (the split worker's allocator settings). */
const ADDED_ENV = 'STEMSPLIT_BENCH_ADDED_ENV';

/**
 * Unless `stay` (a build-only child, or --in-process), runs the script at `scriptUrl` again, with
 * the same argv, as serve and split run models (src/split-worker/worker-pool.ts): in a process of its
 * own started with the allocator settings of the family (its record's `allocator`), on its main
 * thread; then exits with its code.
 */
export function rerunAsSplitWorker(scriptUrl: string, stay: boolean, allocator?: AllocatorProfile): void {
  if (runningAsSplitWorker() || stay) return;
  const env = ortProcessEnv({ ...process.env, [SPLIT_WORKER_RERUN]: '1' }, allocator);
  const added = Object.keys(env).filter((name) => !(name in process.env));
  const run = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(scriptUrl), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...env, [ADDED_ENV]: added.join(',') },
  });
  process.exit(run.status ?? 1);
}

/**
 * The environment for the official code's reference run: `worker` keeps the split worker's allocator
 * settings (MALLOC_*); `user` (the default) is the environment the bench was started in, as a user
 * runs that code.
 */
export function referenceEnv(kind: string): NodeJS.ProcessEnv {
  if (kind === 'worker') return process.env;
  if (kind !== 'user') throw new Error(`--reference-env must be user or worker, not ${kind}`);
  const env = { ...process.env };
  for (const name of (process.env[ADDED_ENV] ?? '').split(',')) delete env[name];
  delete env[ADDED_ENV];
  return env;
}

export const mb = (bytes: number): string => (bytes / 2 ** 20).toFixed(0);

/** How MSST's own run of a bench's network is made: the checkout, model type and config, and where the bench wrote weights.json + weights.bin. */
export interface MsstSide {
  readonly python: string;
  readonly msst: string;
  readonly modelType: string;
  readonly config: string;
  readonly work: string;
  readonly channels: number;
  readonly threads: number;
  readonly referenceEnv: string;
  /** Config overrides, section.key=value (torch 1.13 has no flash attention). */
  readonly set?: readonly string[];
  /** A config in the checkout whose model section the bench's must equal. */
  readonly published?: string;
}

/** stemsplit's side of the comparison: the track it split, its stems, seconds of audio, seconds per minute and peak RSS. */
export interface OurSide {
  readonly track: Float32Array;
  readonly out: Float32Array;
  readonly seconds: number;
  readonly perMinute: number;
  readonly peak: number;
}

/**
 * MSST's own PyTorch inference of the same weights on the same track (scripts/bench/msst_reference.py),
 * printed beside stemsplit's run: speed, peak RSS and the SNR of each stem MSST wrote against stemsplit's.
 */
export function msstSideBySide(side: MsstSide, ours: OurSide): void {
  const trackFile = path.join(side.work, 'track.f32');
  const outFile = path.join(side.work, 'msst.f32');
  writeFileSync(trackFile, ours.track);
  const args = [
    path.resolve(import.meta.dirname, 'msst_reference.py'),
    '--msst',
    side.msst,
    '--model-type',
    side.modelType,
    '--config',
    side.config,
    '--weights',
    side.work,
    '--track',
    trackFile,
    '--channels',
    String(side.channels),
    '--out',
    outFile,
    '--threads',
    String(side.threads),
    ...(side.set ?? []).flatMap((pair) => ['--set', pair]),
    ...(side.published ? ['--published', side.published] : []),
  ];
  const output = execFileSync(side.python, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 24,
    env: referenceEnv(side.referenceEnv),
  });
  const report = JSON.parse(output.trim().split('\n').pop() as string) as {
    torch: string;
    threads: number;
    batch_size: number;
    load_seconds: number;
    seconds: number;
    cpu_seconds: number;
    peak_rss_bytes: number;
    max_rss_bytes: number;
  };
  const theirs = readFileSync(outFile);
  const reference = new Float32Array(theirs.buffer, theirs.byteOffset, theirs.byteLength / 4);
  // MSST writes the target instrument alone where the config names one: compare the stems it wrote.
  const snrs = stemSnrs(reference, ours.out.subarray(0, reference.length), reference.length / ours.track.length);
  const theirsPerMinute = report.seconds * (60 / ours.seconds);
  const peakChange = (100 * (ours.peak - report.peak_rss_bytes)) / report.peak_rss_bytes;
  console.log(
    `MSST PyTorch    torch ${report.torch}, ${report.threads} threads, batch_size ${report.batch_size}: load ${report.load_seconds.toFixed(1)} s, separation ${report.seconds.toFixed(1)} s wall, ${report.cpu_seconds.toFixed(1)} s CPU`,
  );
  console.log(
    `                ${theirsPerMinute.toFixed(1)} s per minute of audio; peak RSS ${mb(report.peak_rss_bytes)} MiB while separating, process max ${mb(report.max_rss_bytes)} MiB`,
  );
  console.log(
    `side by side    stemsplit ${(theirsPerMinute / ours.perMinute).toFixed(2)}× faster, peak RSS ${mb(ours.peak)} vs ${mb(report.peak_rss_bytes)} MiB (${peakChange >= 0 ? '+' : ''}${peakChange.toFixed(0)} %)`,
  );
  console.log(`stems vs MSST   ${snrs.map((snr) => snr.toFixed(1)).join(' / ')} dB`);
}

/** Where a chunk's time goes, summed over a run (a network's `onTiming` adds to it). */
export function chunkTimings(): { timings: { stft: number; graph: number; istft: number }; onTiming: (part: 'stft' | 'graph' | 'istft', ms: number) => void } {
  const timings = { stft: 0, graph: 0, istft: 0 };
  return { timings, onTiming: (part, ms) => void (timings[part] += ms) };
}

export interface DemixRun {
  /** The synthetic track separated, [channels, seconds · rate]. */
  readonly track: Float32Array;
  readonly out: Float32Array;
  readonly wallMs: number;
  readonly cpu: NodeJS.CpuUsage;
  /** Page faults taken while separating (fresh pages of freed and reallocated tensors are most of them). */
  readonly pageFaults: number;
  /** Peak RSS while separating. */
  readonly peak: number;
  readonly chunkMs: readonly number[];
}

/** A loaded network as the benches drive it. */
export interface BenchNetwork {
  readonly settings: { readonly sampleRate: number; readonly channels: number };
  demixTrack(track: Float32Array, options?: DemixRunOptions): Promise<Float32Array>;
  release(): Promise<void>;
}

/**
 * MSST's demix of `seconds` of the synthetic track, timed per chunk, with the peak RSS `sampler`
 * saw from here on (it is stopped); the network is released after.
 */
export async function measureDemix(network: BenchNetwork, seconds: number, sampler: RssSampler): Promise<DemixRun> {
  const track = benchTrack(seconds, network.settings.sampleRate, network.settings.channels);
  sampler.reset();
  const chunkMs: number[] = [];
  let last = performance.now();
  const cpuStarted = process.cpuUsage();
  const faultsStarted = process.resourceUsage().minorPageFault;
  const started = performance.now();
  const out = await network.demixTrack(track, {
    onProgress: () => {
      const now = performance.now();
      chunkMs.push(now - last);
      last = now;
    },
  });
  const wallMs = performance.now() - started;
  const cpu = process.cpuUsage(cpuStarted);
  const pageFaults = process.resourceUsage().minorPageFault - faultsStarted;
  const peak = await sampler.stop();
  await network.release();
  return { track, out, wallMs, cpu, pageFaults, peak, chunkMs };
}

export interface ReportSettings {
  readonly seconds: number;
  readonly threads: number;
  readonly chunkSize: number;
  readonly numOverlap: number;
  readonly sampleRate: number;
  /** The `graph load` line's text. */
  readonly load: string;
  /** Labels of the stft, graph and istft parts. */
  readonly parts: readonly [string, string, string];
  readonly timings: { readonly stft: number; readonly graph: number; readonly istft: number };
}

/** Prints the run: audio, load, separation, per chunk, speed, where the time goes, peak RSS. Returns the seconds per minute of audio. */
export function printDemixRun(run: DemixRun, settings: ReportSettings): number {
  const { seconds, timings } = settings;
  const { wallMs, cpu, chunkMs } = run;
  const sorted = [...chunkMs].sort((a, b) => a - b);
  const medianChunk = sorted[Math.floor(sorted.length / 2)] ?? 0;
  const step = Math.floor(settings.chunkSize / settings.numOverlap) / settings.sampleRate;
  const perMinute = (wallMs / 1000) * (60 / seconds);
  const line = (label: string, ms: number) =>
    `  ${label.padEnd(20)} ${(ms / 1000).toFixed(2).padStart(8)} s  ${((100 * ms) / wallMs).toFixed(1).padStart(5)} %`;
  console.log(
    `audio           ${seconds} s, ${chunkMs.length} chunks of ${settings.chunkSize} samples (num_overlap ${settings.numOverlap}), ${settings.threads} intra-op threads`,
  );
  console.log(`graph load      ${settings.load}`);
  console.log(
    `separation      ${(wallMs / 1000).toFixed(1)} s wall, ${((cpu.user + cpu.system) / 1e6).toFixed(1)} s CPU (${(cpu.system / 1e6).toFixed(1)} s of it in the kernel, ${run.pageFaults} page faults)`,
  );
  console.log(`per chunk       median ${(medianChunk / 1000).toFixed(2)} s (one chunk per ${step.toFixed(2)} s of audio)`);
  console.log(
    `speed           ${perMinute.toFixed(1)} s per minute of audio (this track, borders included); ${((medianChunk / 1000) * (60 / step)).toFixed(1)} s per minute on a long track`,
  );
  console.log('where the time goes');
  console.log(line(settings.parts[0], timings.stft));
  console.log(line(settings.parts[1], timings.graph));
  console.log(line(settings.parts[2], timings.istft));
  console.log(
    `peak RSS        ${mb(run.peak)} MiB while separating (input ${mb(run.track.byteLength)} MiB, output ${mb(run.out.byteLength)} MiB); process max ${mb(process.resourceUsage().maxRSS * 1024)} MiB`,
  );
  return perMinute;
}

/** SNR in dB of each stem of `actual` against `expected`, both [stems, …] of equal planes. */
export function stemSnrs(expected: Float32Array, actual: Float32Array, stems: number): number[] {
  const plane = expected.length / stems;
  return Array.from({ length: stems }, (_, s) => {
    let signal = 0;
    let noise = 0;
    for (let i = s * plane; i < (s + 1) * plane; i++) {
      signal += (expected[i] as number) ** 2;
      noise += ((expected[i] as number) - (actual[i] as number)) ** 2;
    }
    return 10 * Math.log10(signal / Math.max(noise, 1e-30));
  });
}

/** A planar track [channels, length] as the decoder hands it to the streamed pipeline: interleaved blocks. */
export async function* interleavedBlocks(track: Float32Array, channels: number, block = 65_536): AsyncGenerator<Float32Array> {
  const length = track.length / channels;
  for (let start = 0; start < length; start += block) {
    const count = Math.min(block, length - start);
    const out = new Float32Array(channels * count);
    for (let c = 0; c < channels; c++) for (let i = 0; i < count; i++) out[i * channels + c] = track[c * length + start + i] as number;
    yield out;
  }
}
