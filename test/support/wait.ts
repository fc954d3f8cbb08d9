/** Waiting in tests for something another process or thread does. */

/** Polls `condition` every 20 ms; throws `describe()` as an error if it still fails after `timeoutMs`. */
export async function until(condition: () => boolean, timeoutMs = 30_000, describe: () => string = () => 'timed out waiting'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(describe());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
