/**
 * A database outage in a component's log: one line when it begins (what failed, and what the
 * component does meanwhile), one when it ends (how long, how much waited), nothing in between,
 * however many requests, claims or progress writes fail while it lasts.
 */
import { describeError } from '../errors.js';

export class OutageLog {
  readonly #component: string;
  readonly #meanwhile: string;
  readonly #log: ((line: string) => void) | undefined;
  #sinceMs: number | undefined;
  #failures = 0;

  /** `meanwhile`: what the component does until the database answers again, in a few words. */
  constructor(component: string, meanwhile: string, log: ((line: string) => void) | undefined) {
    this.#component = component;
    this.#meanwhile = meanwhile;
    this.#log = log;
  }

  get active(): boolean {
    return this.#sinceMs !== undefined;
  }

  /** Something failed for want of the database: logged only when it begins an outage. */
  failed(error: unknown): void {
    this.#failures++;
    if (this.#sinceMs !== undefined) return;
    this.#sinceMs = Date.now();
    this.#log?.(`${this.#component}: ${describeError(error)}; ${this.#meanwhile} (logged once; one more line when it is back)`);
  }

  /** The database answered: ends an outage, in one line. */
  answered(): void {
    if (this.#sinceMs === undefined) return;
    const seconds = Math.round((Date.now() - this.#sinceMs) / 1000);
    this.#log?.(
      `${this.#component}: the database answers again after ${seconds} s (${this.#failures} operation${this.#failures === 1 ? '' : 's'} failed meanwhile)`,
    );
    this.#sinceMs = undefined;
    this.#failures = 0;
  }
}
