/**
 * Peak resident memory and speed of `stemsplit split` on long sources, to show that memory does
 * not grow with length (the split streams its audio). For each length the source is generated
 * (tones, a chord, noise bursts: content every stem has work on) as FLAC, then split to MP3 stems
 * by a child `stemsplit split`. Peak RSS is the VmHWM of that process and of the split worker it
 * starts (the process that runs the model); ffmpeg's decoder and encoders are separate processes
 * of a few MB each, reported apart as their summed peak. The worker's glibc heap (its `[heap]`
 * mapping: the allocator's one arena, where ONNX Runtime's tensors below the mmap threshold live)
 * is reported apart too, as its peak resident size: growth there is fragmentation, not a leak.
 *
 *   node --import tsx scripts/bench/memory.ts [--minutes 5,60,180] [--model 4s]
 *   node --import tsx scripts/bench/memory.ts --minutes 10,60 --model ../shared/fixtures/demucs/htdemucs_full_random.th
 *   node --import tsx scripts/bench/memory.ts --minutes 3,30 --model A.ckpt --model B.onnx   (an ensemble)
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { resolveFfmpegPath } from '../../src/audio/index.js';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '5,60,180' },
    model: { type: 'string', multiple: true, default: ['4s'] },
  },
});
const root = fileURLToPath(new URL('../..', import.meta.url));

function makeSource(file: string, seconds: number): void {
  const made = spawnSync(resolveFfmpegPath(), [
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=55:duration=${seconds}`,
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:duration=${seconds}`,
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=659:duration=${seconds}`,
    '-f',
    'lavfi',
    '-i',
    `anoisesrc=d=${seconds}:a=0.1:c=pink`,
    '-filter_complex',
    "[3]volume=enable='lt(mod(t,0.5),0.05)':volume=1,volume=enable='gte(mod(t,0.5),0.05)':volume=0.1[hat];[0][1][2][hat]amix=inputs=4,aformat=channel_layouts=stereo",
    '-ar',
    '44100',
    '-c:a',
    'flac',
    file,
  ]);
  if (made.status !== 0) throw new Error(made.stderr.toString());
}

function status(pid: number | string, field: 'VmHWM' | 'VmRSS'): number {
  return Number(new RegExp(`${field}:\\s+(\\d+)`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
}

function childrenOf(pid: number | string): string[] {
  return readdirSync(`/proc/${pid}/task`).flatMap((task) => readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').trim().split(/\s+/).filter(Boolean));
}

/** Resident kB of the process's `[heap]` mappings (glibc's main arena; huge pages split it into several). */
function heapRss(pid: number | string): number {
  const smaps = readFileSync(`/proc/${pid}/smaps`, 'utf8');
  let total = 0;
  for (let at = smaps.indexOf(' [heap]\n'); at >= 0; at = smaps.indexOf(' [heap]\n', at + 1)) {
    total += Number(/\nRss:\s+(\d+)/.exec(smaps.slice(at))?.[1] ?? 0);
  }
  return total;
}

/** Peak RSS (VmHWM) of `pid` and of its split worker, the worker's current glibc heap, and the summed current RSS of the other processes under it, in kB. */
function sample(pid: number): { cli: number; worker: number; heap: number; ffmpeg: number } {
  const found = { cli: status(pid, 'VmHWM'), worker: 0, heap: 0, ffmpeg: 0 };
  const pending = childrenOf(pid);
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    try {
      if (readFileSync(`/proc/${id}/cmdline`, 'utf8').includes('worker-process')) {
        found.worker = Math.max(found.worker, status(id, 'VmHWM'));
        found.heap = Math.max(found.heap, heapRss(id));
      } else found.ffmpeg += status(id, 'VmRSS');
      pending.push(...childrenOf(id));
    } catch {
      // that process has exited
    }
  }
  return found;
}

interface Row {
  readonly minutes: number;
  readonly peakMiB: number;
  readonly workerMiB: number;
  readonly heapMiB: number;
  readonly ffmpegMiB: number;
  readonly wall: number;
  readonly load: number;
}

async function measure(minutes: number): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'stemsplit-mem-'));
  try {
    const song = join(dir, `long-${minutes}.flac`);
    makeSource(song, minutes * 60);
    const started = Date.now();
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'src/cli/run.ts', 'split', song, '-o', join(dir, 'out'), ...(values.model as string[]).flatMap((model) => ['--model', model])],
      {
        cwd: root,
        env: { ...process.env, STEMSPLIT_DATA_DIR: join(dir, 'data') },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-2000)));
    let peakKb = 0;
    let workerKb = 0;
    let heapKb = 0;
    let ffmpegKb = 0;
    const timer = setInterval(() => {
      try {
        const { cli, worker, heap, ffmpeg } = sample(child.pid as number);
        peakKb = Math.max(peakKb, cli);
        workerKb = Math.max(workerKb, worker);
        heapKb = Math.max(heapKb, heap);
        ffmpegKb = Math.max(ffmpegKb, ffmpeg);
      } catch {
        // the process has exited
      }
    }, 100);
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    clearInterval(timer);
    if (code !== 0) throw new Error(`split of ${minutes} minutes exited with ${code}: ${stderr.split('\r').at(-1)}`);
    return {
      minutes,
      peakMiB: peakKb / 1024,
      workerMiB: workerKb / 1024,
      heapMiB: heapKb / 1024,
      ffmpegMiB: ffmpegKb / 1024,
      wall: (Date.now() - started) / 1000,
      load: loadavg()[0] ?? 0,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

console.log(
  `stemsplit split ${(values.model as string[]).map((model) => `--model ${model}`).join(' ')} (ONNX threads: one per core, ${availableParallelism()} here), FLAC source, MP3 320 kb/s stems`,
);
console.log(
  '| source | peak RSS (split worker) | its glibc heap (peak) | peak RSS (CLI) | ffmpeg processes (peak sum) | wall | s per minute of audio | load avg at end |',
);
console.log('|---|---|---|---|---|---|---|---|');
const rows: Row[] = [];
for (const minutes of (values.minutes as string).split(',').map(Number)) {
  const row = await measure(minutes);
  rows.push(row);
  console.log(
    `| ${minutes} min | ${row.workerMiB.toFixed(0)} MiB | ${row.heapMiB.toFixed(0)} MiB | ${row.peakMiB.toFixed(0)} MiB | ${row.ffmpegMiB.toFixed(0)} MiB | ${row.wall.toFixed(0)} s | ${(row.wall / minutes).toFixed(1)} | ${row.load.toFixed(1)} |`,
  );
}
if (rows.length > 1) {
  const peaks = rows.map((row) => row.workerMiB);
  const spread = (Math.max(...peaks) - Math.min(...peaks)) / Math.min(...peaks);
  console.log(`peak RSS spread across lengths: ${(100 * spread).toFixed(1)} %`);
}
