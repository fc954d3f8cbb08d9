/**
 * `stemsplit models bench NAME…`: how fast a model runs on this box, measured the way a job runs
 * it (a worker process, the model loaded once, then a song split into stems), and recorded where
 * `models list`, GET /v1/models and the web page's estimate read it, as a job's figure would be.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveFfmpegPath } from '../../audio/index.js';
import { StemsplitError } from '../../errors.js';
import { registryFor } from '../../models/registry.js';
import { deviceSplitter } from '../../split-worker/worker-pool.js';
import { print, printJson, withStore, type CommandContext } from '../context.js';
import { checkPrecision } from './split.js';
import { createProgressBar } from '../progress.js';

export interface BenchOptions {
  readonly seconds: number;
  readonly json?: boolean;
}

/** The first run loads (and converts) the model; this much audio warms it before the timed run. */
const WARM_UP_SECONDS = 2;

export async function modelsBench(ctx: CommandContext, names: readonly string[], options: BenchOptions): Promise<void> {
  const registry = registryFor(ctx.config);
  const models = names.map((name) => registry.resolve(name));
  for (const model of models) checkPrecision(model, ctx.config.precision);
  const work = mkdtempSync(join(tmpdir(), 'stemsplit-bench-'));
  const results = [];
  try {
    const warmUp = writeTestSong(join(work, 'warm-up.wav'), WARM_UP_SECONDS);
    const song = writeTestSong(join(work, 'song.wav'), options.seconds);
    for (const model of models) {
      const { config } = ctx;
      const splitter = deviceSplitter({ cacheDir: config.cacheDir, intraOpThreads: config.intraOpThreads, precision: config.precision }, 1, {
        choice: config.device,
        gpuWorkers: 1,
      });
      try {
        ctx.stderr.write(`${model.name}: loading, then splitting ${options.seconds} s of audio…\n`);
        await splitter.split({ inputPath: warmUp, model, outDir: join(work, 'warm-up'), format: 'wav' }, () => undefined);
        const bar = createProgressBar(ctx.stderr, `${model.name} `);
        const started = Date.now();
        const result = await splitter.split({ inputPath: song, model, outDir: join(work, 'out'), format: 'wav' }, ({ phase, percent }) =>
          bar.update(percent, phase),
        );
        const seconds = (Date.now() - started) / 1000;
        bar.done();
        await withStore(ctx, (data) => data.modelTimings.record(model.name, seconds, result.durationSeconds));
        const perMinute = Math.round((600 * seconds) / result.durationSeconds) / 10;
        results.push({
          model: model.name,
          secondsPerMinute: perMinute,
          seconds,
          audioSeconds: result.durationSeconds,
          threads: config.intraOpThreads,
          precision: config.precision,
          device: result.device,
        });
        if (!options.json)
          print(
            ctx,
            `${model.name}: ${perMinute} s per minute of audio on this box (${seconds.toFixed(1)} s for ${result.durationSeconds.toFixed(1)} s, on ${result.device}, ${config.intraOpThreads} threads, ${config.precision}); recorded for models list and GET /v1/models`,
          );
      } finally {
        await splitter.close();
      }
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  if (options.json) printJson(ctx, results);
}

/** A song-like test signal (a chord, a bass line, noise bursts for drums), made by ffmpeg: no clip is shipped. */
function writeTestSong(path: string, seconds: number): string {
  const rate = 44100;
  const inputs = [
    `sine=frequency=110:duration=${seconds}:sample_rate=${rate}`,
    `sine=frequency=440:duration=${seconds}:sample_rate=${rate}`,
    `anoisesrc=d=${seconds}:a=0.05:r=${rate}`,
  ];
  const args = [
    '-loglevel',
    'error',
    '-y',
    ...inputs.flatMap((input) => ['-f', 'lavfi', '-i', input]),
    '-filter_complex',
    '[0][1][2]amix=inputs=3,aformat=channel_layouts=stereo',
    '-ar',
    String(rate),
    path,
  ];
  const result = spawnSync(resolveFfmpegPath(), args, { encoding: 'utf8' });
  if (result.status !== 0) throw new StemsplitError('IO_ERROR', `ffmpeg could not write the test song: ${result.stderr.trim().split('\n').at(-1) ?? ''}`);
  return path;
}
