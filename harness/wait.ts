/** Waiting in tests for something another process or thread does. */

/** Polls `condition` every 20 ms; throws `describe()` as an error if it still fails after `timeoutMs`. */
export async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 30_000, describe: () => string = () => 'timed out waiting'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(describe());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Reads `read()` every 50 ms until `done` accepts a value, which it returns; throws with the last value after `timeoutMs`. */
export async function poll<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 5_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(value)} after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
