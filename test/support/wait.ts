/**
 * Waiting in tests for something another process or thread does: a file appears, a line is
 * printed, a row changes. A split is waited for with the API client (client.ts).
 */

/** Polls `condition` every 20 ms; throws `describe()` as an error if it still fails after `timeoutMs`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
  describe: () => string = () => 'timed out waiting',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(describe());
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
