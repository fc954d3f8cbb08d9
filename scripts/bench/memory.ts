/**
 * Peak resident memory of `stemsplit split` on a long song (default 10 minutes), read from the
 * child's VmHWM in /proc while it runs. The song is generated (tones and noise) and encoded to MP3.
 *
 *   node --import tsx scripts/bench/memory.ts [--minutes 10] [--model 4s]
 */
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { resolveFfmpegPath } from '../../src/audio/index.js';
import { tempDir } from '../../test/support/server.js';

const { values } = parseArgs({ options: { minutes: { type: 'string', default: '10' }, model: { type: 'string', default: '4s' } } });
const seconds = Number(values.minutes) * 60;
const dir = tempDir('stemsplit-mem-');
const song = join(dir, 'long.mp3');
const made = spawnSync(resolveFfmpegPath(), [
  '-loglevel', 'error', '-y',
  '-f', 'lavfi', '-i', `sine=frequency=110:duration=${seconds}`,
  '-f', 'lavfi', '-i', `sine=frequency=440:duration=${seconds}`,
  '-f', 'lavfi', '-i', `anoisesrc=d=${seconds}:a=0.05`,
  '-filter_complex', '[0][1][2]amix=inputs=3,aformat=channel_layouts=stereo', '-ar', '44100', '-b:a', '192k', song,
]);
if (made.status !== 0) throw new Error(made.stderr.toString());

const root = fileURLToPath(new URL('../..', import.meta.url));
const started = Date.now();
const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'split', song, '-o', join(dir, 'out'), '--model', values.model], {
  cwd: root,
  env: { ...process.env, STEMSPLIT_DATA_DIR: join(dir, 'data') },
  stdio: ['ignore', 'ignore', 'inherit'],
});
let peakKb = 0;
const sample = () => {
  try {
    const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
    peakKb = Math.max(peakKb, Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0));
  } catch {
    // the process has exited
  }
};
const timer = setInterval(sample, 50);
const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
clearInterval(timer);
if (code !== 0) throw new Error(`split exited with ${code}`);
const wall = (Date.now() - started) / 1000;
const outputMb = (4 * 2 * seconds * 44100 * 4) / 1e6;
console.log(`split of a ${values.minutes}-minute MP3 with --model ${values.model}`);
console.log('| peak RSS | wall time | float32 stem buffers alone |');
console.log('|---|---|---|');
console.log(`| ${(peakKb / 1024).toFixed(0)} MB | ${wall.toFixed(1)} s | ${outputMb.toFixed(0)} MB |`);
