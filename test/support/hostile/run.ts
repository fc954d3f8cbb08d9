/**
 * Runs hostile model files and judges the outcome: through the real CLI (`stemsplit split --model
 * FILE`, timed and measured by /usr/bin/time), or through the same registry and loaders the
 * split worker uses, in this process (the bulk of a fuzzing run). A refusal passes when it is one
 * line naming the file, with the model-file code (exit 13), within 5 s and 500 MB.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describeError, isStemsplitError } from '../../../src/errors.js';
import { modelLoader } from '../../../src/models/loaders.js';
import { ModelRegistry } from '../../../src/models/registry.js';
import { loadNamed } from '../../../src/split-worker/load-refusal.js';
import { writeSong } from '../audio.js';
import { tempDir } from '../temp-dir.js';
import type { HostileCase, HostileFiles } from './cases.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/** The bounds issue 37 sets for every refusal (measured in-process: the refusal itself). */
export const REFUSAL_LIMITS = { seconds: 5, megabytes: 500 } as const;
/**
 * Through the CLI the time also counts starting Node, tsx and the split worker (about 1.5 s on an
 * idle 2-core box, five times that under a load average of 15): the bound for a whole run
 * of the CLI on a hostile file is 60 s; memory keeps the refusal's bound.
 */
export const CLI_LIMITS = { seconds: 60, megabytes: 500 } as const;

export interface HostileOutcome {
  readonly name: string;
  /** `refused`: a StemsplitError (the CLI: a non-zero exit); `accepted`: the file loaded (a valid mutation). */
  readonly result: 'refused' | 'accepted';
  readonly code: string | number | undefined;
  readonly message: string;
  readonly seconds: number;
  /** Peak resident memory of the run (the CLI: its largest process; in-process: this process's peak since the case began), MB. */
  readonly peakMb: number;
  /** What breaks the rules; empty when the outcome is as it should be. */
  readonly problems: readonly string[];
}

/** Judges a refusal: one line, naming the file, with the model-file code, in time and memory. */
function problemsOf(
  outcome: Omit<HostileOutcome, 'problems'>,
  files: HostileFiles,
  expectedCode: string | number,
  limits: { readonly seconds: number; readonly megabytes: number },
): string[] {
  const problems: string[] = [];
  if (outcome.result === 'refused') {
    if (outcome.code !== expectedCode) problems.push(`code ${String(outcome.code)}, expected ${String(expectedCode)}`);
    if (![files.names, files.model].some((file) => outcome.message.includes(basename(file))))
      problems.push(`the message does not name ${basename(files.names)}`);
    if (outcome.message.trim().includes('\n')) problems.push('more than one line');
    if (/\(node:\d+\)|\bat .+:\d+:\d+|Maximum call stack|out of range|Received /.test(outcome.message)) problems.push('a raw JavaScript message');
  }
  if (outcome.seconds > limits.seconds) problems.push(`took ${outcome.seconds.toFixed(1)} s`);
  if (outcome.peakMb > limits.megabytes) problems.push(`peak ${outcome.peakMb} MB`);
  return problems;
}

/** Peak RSS of this process since the last reset (Linux: /proc/self/status VmHWM), MB. */
function peakRssMb(): number {
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Math.round(Number(match[1]) / 1024) : 0;
}

/** V8's collector, reachable without --expose-gc, so one case's garbage does not count in the next case's peak. */
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Resident memory now (Linux: VmRSS), MB. */
function rssMb(): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return match ? Number(match[1]) / 1024 : 0;
}

/**
 * Garbage left by earlier cases that a case's peak may include without a collection first: a full
 * collection costs some 20 ms with this process's heap, 4 of the fuzz test's 10 s of CPU when run
 * before each of 283 cases, though most cases leave almost nothing.
 */
const UNCOLLECTED_MB = 32;
let collectedAtMb = 0;

/**
 * Resets VmHWM to the current RSS (Linux ≥ 4.0), after a collection when earlier cases left more
 * than UNCOLLECTED_MB since the last one, so each case measures its own peak (within that much).
 */
function resetPeakRss(): void {
  if (rssMb() - collectedAtMb > UNCOLLECTED_MB) {
    collectGarbage();
    collectedAtMb = rssMb();
  }
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // Not Linux or not allowed: the peak then covers every case so far, an upper bound.
  }
}

/** Loads models as the split worker does, in this process (one converter cache for the whole run). */
export function libraryRunner(): (hostile: HostileCase) => Promise<HostileOutcome> {
  const cacheDir = tempDir('stemsplit-hostile-cache-');
  const loaders = modelLoader({ cacheDir, intraOpThreads: 1 });
  const registry = new ModelRegistry({ bundledDir: join(cacheDir, 'no-bundled'), cacheDir, aliases: { '4s': [], '6s': [] } });
  return async (hostile) => {
    const dir = tempDir('stemsplit-hostile-');
    const files = hostile.write(dir);
    resetPeakRss();
    const started = performance.now();
    let outcome: Omit<HostileOutcome, 'problems'>;
    try {
      const ref = registry.resolveModel(files.model);
      // Loaded and refused as the split worker loads and refuses models.
      const model = await loadNamed(ref, loaders);
      await model.dispose();
      outcome = { name: hostile.name, result: 'accepted', code: undefined, message: '', seconds: 0, peakMb: 0 };
    } catch (error) {
      const code = isStemsplitError(error) ? error.code : `raw ${error instanceof Error ? error.name : typeof error}`;
      outcome = { name: hostile.name, result: 'refused', code, message: describeError(error), seconds: 0, peakMb: 0 };
    }
    outcome = { ...outcome, seconds: (performance.now() - started) / 1000, peakMb: peakRssMb() };
    return { ...outcome, problems: problemsOf(outcome, files, 'MODEL_INVALID', REFUSAL_LIMITS) };
  };
}

/**
 * Runs `stemsplit split SONG --model FILE` for each case, in a child process measured by
 * /usr/bin/time. Asynchronous, so several cases may run side by side (each is its own processes).
 */
export function cliRunner(): (hostile: HostileCase, extraModels?: readonly string[]) => Promise<HostileOutcome> {
  const work = tempDir('stemsplit-hostile-cli-');
  const song = join(work, 'song.wav');
  writeSong(song, 1);
  return async (hostile, extraModels = []) => {
    const dir = tempDir('stemsplit-hostile-');
    const files = hostile.write(dir);
    const out = join(dir, 'stems');
    const models = [...extraModels, files.model].flatMap((model) => ['--model', model]);
    const started = performance.now();
    const run = await finished(
      spawn(
        '/usr/bin/time',
        [
          '-q',
          '-f',
          'peak-kb %M',
          'timeout',
          '-s',
          'KILL',
          '60',
          process.execPath,
          '--import',
          'tsx',
          'src/cli/run.ts',
          '--data-dir',
          join(dir, 'data'),
          'split',
          song,
          ...models,
          '-o',
          out,
        ],
        { cwd: ROOT, env: { ...process.env, STEMSPLIT_CACHE_DIR: join(dir, 'cache') }, stdio: ['ignore', 'ignore', 'pipe'], timeout: 120_000 },
      ),
    );
    const seconds = (performance.now() - started) / 1000;
    const lines = run.stderr.split('\n').filter((line) => line !== '');
    const peak = lines.find((line) => line.startsWith('peak-kb '));
    // Every line but the peak: a refusal as the model loads is alone on stderr. A model refused as it
    // runs has loaded first, and said so ("Loaded model …", "  0% decode"): those lines are not counted.
    const loaded = lines.some((line) => LOADED_LINE.test(line));
    const said = lines.filter((line) => line !== peak && !(loaded && AFTER_LOAD_LINE.test(line)));
    const outcome: Omit<HostileOutcome, 'problems'> = {
      name: hostile.name,
      result: run.status === 0 ? 'accepted' : 'refused',
      code: run.status ?? `signal ${run.signal ?? '?'}`,
      message: said.join('\n'),
      seconds,
      peakMb: peak ? Math.round(Number(peak.slice('peak-kb '.length)) / 1024) : 0,
    };
    const problems = problemsOf(outcome, files, 13, CLI_LIMITS);
    if (outcome.result === 'accepted') problems.push('the split succeeded');
    if (existsSync(out) && readdirSync(out).length > 0) problems.push(`wrote into ${out}`);
    return { ...outcome, problems };
  };
}

/** The line a split prints on stderr once its models have loaded, and the lines that follow it as it goes. */
const LOADED_LINE = /^Loaded models? /;
const AFTER_LOAD_LINE = /^(Loaded models? |\(the small bundled model;|\s*\d+% \w)/;

/** A child's exit status and stderr, once it has exited. */
function finished(child: ChildProcess): Promise<{ status: number | null; signal: NodeJS.Signals | null; stderr: string }> {
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status, signal) => resolve({ status, signal, stderr }));
  });
}
