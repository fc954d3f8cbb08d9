/** Time as the store sees it: injected so tests can move it. */
export interface Clock {
  now(): number;
}

export const systemClock: Clock = Object.freeze({ now: () => Date.now() });

export function isoAt(ms: number): string {
  return new Date(ms).toISOString();
}
