/** `stemsplit split <files…>`: local separation, no server, no credits. */
import { statSync } from 'node:fs';
import { basename, extname, join, resolve } from 'node:path';
import type { StemFormat } from '../../audio/index.js';
import { StemsplitError } from '../../errors.js';
import { removeStaging } from '../../jobs/split-file.js';
import { workerSplitter } from '../../jobs/splitter.js';
import { registryFor } from '../../models/registry.js';
import { print, printJson, type CommandContext } from '../context.js';
import { createProgressBar } from '../progress.js';

export interface SplitOptions {
  model: string;
  modelConfig?: string;
  output: string;
  format: string;
  float32?: boolean;
  mp3Bitrate?: string;
  shifts?: string;
  json?: boolean;
}

const FORMATS: readonly StemFormat[] = ['mp3', 'wav', 'flac'];

function parseOptions(options: SplitOptions): { format: StemFormat; bitrate: number | undefined; shifts: number } {
  if (!FORMATS.includes(options.format as StemFormat)) throw new StemsplitError('USAGE', `--format must be mp3, wav or flac, got "${options.format}"`);
  const format = options.format as StemFormat;
  if (options.float32 && format !== 'wav') throw new StemsplitError('USAGE', '--float32 applies to --format wav only');
  const bitrate = options.mp3Bitrate === undefined ? undefined : Number(options.mp3Bitrate);
  if (bitrate !== undefined && (!Number.isInteger(bitrate) || bitrate < 32 || bitrate > 320)) {
    throw new StemsplitError('USAGE', `--mp3-bitrate must be a whole number of kb/s from 32 to 320, got "${options.mp3Bitrate}"`);
  }
  const shifts = Number(options.shifts ?? 0);
  if (!Number.isInteger(shifts) || shifts < 0 || shifts > 20) throw new StemsplitError('USAGE', '--shifts must be a whole number from 0 to 20');
  return { format, bitrate, shifts };
}

function checkIsFile(file: string): void {
  const stats = statSync(file, { throwIfNoEntry: false });
  if (!stats) throw new StemsplitError('USAGE', `no such file: ${file}`);
  if (stats.isDirectory()) throw new StemsplitError('USAGE', `${file} is a folder; name the songs in it (e.g. ${join(file, '*.mp3')})`);
  if (!stats.isFile()) throw new StemsplitError('USAGE', `not a regular file: ${file}`);
}

/**
 * Ctrl-C or SIGTERM mid-split calls `stop` (which ends the worker, so the running split fails)
 * instead of killing the process at once: the caller can then remove the half-encoded stems.
 * A second signal finds the default handlers back and ends the process there and then.
 */
function stopOnInterrupt(stop: () => unknown): { received(): NodeJS.Signals | undefined; dispose(): void } {
  let received: NodeJS.Signals | undefined;
  const dispose = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    received = signal;
    dispose();
    void stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { received: () => received, dispose };
}

export async function splitCommand(ctx: CommandContext, files: string[], options: SplitOptions): Promise<void> {
  const { format, bitrate, shifts } = parseOptions(options);
  for (const file of files) checkIsFile(file);
  const { config } = ctx;
  const registry = registryFor(config);
  const ref = registry.resolve(options.model, options.modelConfig);
  // One worker thread runs the jobs (as `serve` does): this thread keeps drawing the progress.
  const splitter = workerSplitter({ cacheDir: config.cacheDir, intraOpThreads: config.intraOpThreads }, 1);
  ctx.stderr.write(`Loading model ${ref.name} (terms of its weights: ${ref.terms})…\n`);
  if ((options.model === '4s' || options.model === '6s') && ref.kind !== 'demucs') {
    const demucs = options.model === '4s' ? 'htdemucs' : 'htdemucs_6s';
    ctx.stderr.write(`(the small bundled model; for Demucs v4 quality run "stemsplit models pull ${demucs}" once)\n`);
  }
  const results: Array<{ input: string; model: string; durationSeconds: number; stems: Record<string, string> }> = [];
  const interrupts = stopOnInterrupt(() => splitter.close());
  try {
    for (const file of files) {
      const track = basename(file, extname(file));
      const outDir = resolve(join(options.output, track));
      const bar = createProgressBar(ctx.stderr, files.length > 1 ? `${track} ` : '');
      const started = Date.now();
      const job = {
        inputPath: resolve(file),
        model: ref,
        outDir,
        format,
        shifts,
        ...(bitrate !== undefined ? { mp3BitrateKbps: bitrate } : {}),
        ...(options.float32 ? { float32: true } : {}),
      };
      const result = await splitter.split(job, ({ phase, percent }) => bar.update(percent, phase)).catch(async (error: unknown) => {
        bar.done();
        const signal = interrupts.received();
        if (!signal) throw error;
        await removeStaging(outDir);
        throw new StemsplitError('INTERRUPTED', `stopped by ${signal}; nothing was written for ${track}`);
      });
      const seconds = (Date.now() - started) / 1000;
      bar.done(`${track}: ${Object.keys(result.stems).length} stems in ${outDir} (${seconds.toFixed(1)} s for ${result.durationSeconds.toFixed(1)} s of audio)`);
      results.push({ input: file, model: ref.name, durationSeconds: result.durationSeconds, stems: { ...result.stems } });
    }
  } finally {
    interrupts.dispose();
    await splitter.close();
  }
  if (options.json) printJson(ctx, results.length === 1 ? results[0] : results);
  else for (const r of results) for (const [stem, path] of Object.entries(r.stems)) print(ctx, `${stem}\t${path}`);
}
