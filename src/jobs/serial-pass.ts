/**
 * A pass that never runs twice at once: `run()` starts it now, or, while one is in flight, asks
 * for one more right after it. The job runner's claims and the webhook dispatcher's sends both
 * work this way, so a burst of triggers costs one extra pass, not one each.
 */
export class SerialPass {
  readonly #pass: () => Promise<void>;
  /** Called when a pass ends: `requestedAgain` when `run()` was called meanwhile (the owner decides whether to run it). */
  readonly #settled: (requestedAgain: boolean) => void;
  #running: Promise<void> | undefined;
  #again = false;

  constructor(pass: () => Promise<void>, settled: (requestedAgain: boolean) => void) {
    this.#pass = pass;
    this.#settled = settled;
  }

  run(): void {
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#pass().finally(() => {
      this.#running = undefined;
      const again = this.#again;
      this.#again = false;
      this.#settled(again);
    });
  }

  /** Settles when the pass in flight, if any, has. */
  async idle(): Promise<void> {
    await this.#running;
  }
}
