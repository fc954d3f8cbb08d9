/**
 * Separation speed depends on how glibc's malloc treats ONNX Runtime's tensors. By default a
 * block over the mmap threshold (128 KiB, adapting up to 32 MiB) is a fresh mmap, returned to
 * the kernel on free, so every run of a Demucs stage page-faults its tensors in again: the
 * kernel's page zeroing was 15 % of a separation's CPU time. With blocks up to 32 MiB served
 * from the heap, freed ones are reused: a minute of audio separates in 28–29.5 s instead of
 * 30.6–31.6 s, at a peak of 1052–1084 MiB instead of 1017 (scripts/bench/demucs.ts,
 * docs/demucs.md). Keeping more free heap (MALLOC_TRIM_THRESHOLD_) was ~1 s faster still but
 * peaked up to 1156 MiB, too close to the 1.2 GB budget.
 *
 * glibc reads this only when a process starts, so `serve` and `split` start themselves once
 * more with it, and the first process only relays signals and the exit code.
 */
import { spawn } from 'node:child_process';
import { constants } from 'node:os';

export const ALLOCATOR_ENV: Readonly<Record<string, string>> = {
  MALLOC_MMAP_THRESHOLD_: String(32 * 2 ** 20),
};

/** Set in the relaunched process: its parent is the relaunching one. */
const RELAUNCHED = 'STEMSPLIT_RELAUNCHED';

/** Commands that separate audio, and so profit from the allocator settings. */
const SEPARATING_COMMANDS = new Set(['serve', 'split']);

const RELAYED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** True on glibc Linux when this process lacks the settings and runs a separating command. */
export function shouldRelaunch(args: readonly string[], env: NodeJS.ProcessEnv): boolean {
  if (!args.some((arg) => SEPARATING_COMMANDS.has(arg))) return false;
  if (env[RELAUNCHED] !== undefined || env['STEMSPLIT_NO_RELAUNCH'] !== undefined) return false;
  if (Object.keys(ALLOCATOR_ENV).every((name) => env[name] !== undefined)) return false;
  // Last: the process report that tells glibc from musl takes a few milliseconds.
  return process.platform === 'linux' && isGlibc();
}

function isGlibc(): boolean {
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return typeof report?.header?.glibcVersionRuntime === 'string';
}

/**
 * Runs this command again in a child with the allocator settings: `process.execPath` with
 * `entry` (the Node options and script, or nothing for the standalone executable) and `args`.
 * Resolves with the exit code to use (128 + signal number when the child died of a signal).
 * The child inherits stdio, so progress bars and pipes work as before; signals sent to this
 * process are passed on.
 */
export function relaunch(entry: readonly string[], args: readonly string[]): Promise<number> {
  const child = spawn(process.execPath, [...entry, ...args], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...ALLOCATOR_ENV, [RELAUNCHED]: '1' },
  });
  const relay = (signal: NodeJS.Signals) => child.kill(signal);
  for (const signal of RELAYED_SIGNALS) process.on(signal, relay);
  return new Promise((resolve) => {
    child.once('error', (error) => {
      process.stderr.write(`stemsplit: cannot start: ${error.message}\n`);
      resolve(1);
    });
    child.once('exit', (code, signal) => {
      for (const name of RELAYED_SIGNALS) process.off(name, relay);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}

/**
 * In the relaunched process: exit at once when the parent goes away (killed with SIGKILL, it
 * could not pass the signal on), as the parent's own death would have ended the work.
 */
export function followParent(): void {
  if (process.env[RELAUNCHED] === undefined || process.channel === undefined) return;
  process.channel.unref();
  process.once('disconnect', () => process.kill(process.pid, 'SIGKILL'));
}
