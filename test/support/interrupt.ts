/** Ctrl-C for a CLI run: starts it, sends SIGINT once `ready` holds, and measures how long it takes to end. */
import { spawnCli } from './process.js';
import { until } from './wait.js';

export interface Interrupted {
  /** Its exit code. */
  readonly code: number | null;
  /** From SIGINT to its exit. */
  readonly seconds: number;
  readonly stderr: string;
}

/** `ready` is asked (with what the run has printed so far) until it holds, for 240 s at most. */
export async function interruptWhen(
  args: readonly string[],
  env: Record<string, string>,
  ready: (stderr: string) => boolean,
  what: string,
): Promise<Interrupted> {
  const child = spawnCli(args, env);
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  await until(
    () => ready(stderr) || child.exitCode !== null,
    240_000,
    () => `${what} never began: ${stderr}`,
  );
  if (!ready(stderr)) throw new Error(`${what} never began: ${stderr}`);
  const stopped = performance.now();
  child.kill('SIGINT');
  const code = await exited;
  return { code, seconds: (performance.now() - stopped) / 1000, stderr };
}
