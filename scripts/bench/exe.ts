/**
 * Size and start-up time of the standalone executable (build it first: `npm run build:exe`).
 * First start unpacks the runtime into a fresh cache dir; warm starts reuse it. Each warm
 * figure is the median wall time of --runs starts, with an empty PATH (no node, no ffmpeg).
 *
 *   node --import tsx scripts/bench/exe.ts [--exe dist/stemsplit-linux-x64] [--runs 15]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { exe: { type: 'string', default: 'dist/stemsplit-linux-x64' }, runs: { type: 'string', default: '15' } } });
const exe = resolve(values.exe);
const runs = Number(values.runs);
const dir = mkdtempSync(join(tmpdir(), 'stemsplit-exe-bench-'));
const env = { HOME: dir, STEMSPLIT_CACHE_DIR: join(dir, 'cache'), STEMSPLIT_DATA_DIR: join(dir, 'data') };

/** Wall time of one start in seconds; throws when the command fails. */
function timeOnce(command: string, args: readonly string[]): number {
  const started = performance.now();
  const result = spawnSync(command, [...args], { env, encoding: 'utf8' });
  const seconds = (performance.now() - started) / 1000;
  if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed: ${result.stderr}`);
  return seconds;
}

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function warm(command: string, args: readonly string[]): string {
  timeOnce(command, args);
  const samples = Array.from({ length: runs }, () => timeOnce(command, args));
  return `${median(samples).toFixed(3)} s (min ${Math.min(...samples).toFixed(3)} s)`;
}

try {
  console.log(`executable       ${exe}`);
  console.log(`size             ${(statSync(exe).size / 1e6).toFixed(1)} MB`);
  console.log(`first start      ${timeOnce(exe, ['--version']).toFixed(3)} s  (--version, unpacks the runtime)`);
  console.log(`warm --version   ${warm(exe, ['--version'])}`);
  console.log(`warm keys list   ${warm(exe, ['keys', 'list'])}`);
  console.log(`warm models list ${warm(exe, ['models', 'list'])}`);
  console.log(`node -e 0        ${warm(process.execPath, ['-e', '0'])}  (this machine's floor, for comparison)`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
