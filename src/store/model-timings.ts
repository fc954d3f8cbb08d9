/**
 * How fast each model runs here, learned from real jobs: the seconds a separation took per
 * minute of audio, summed over every job that ran it (the first job gives the first figure).
 */
import { sql } from 'kysely';
import { isoAt, type Clock } from './clock.js';
import type { Store } from './database.js';

export class ModelTimings {
  readonly #store: Store;
  readonly #clock: Clock;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  /** Adds one job's figures to the model's sums (an ensemble is timed under its `A+B` name). */
  async record(modelName: string, processingSeconds: number, audioSeconds: number): Promise<void> {
    if (!(audioSeconds > 0) || !(processingSeconds >= 0)) return;
    const updatedAt = isoAt(this.#clock.now());
    await this.#store.run(
      this.#store.db
        .insertInto('modelTimings')
        .values({ modelName, processingSeconds, audioSeconds, jobs: 1, updatedAt })
        .onConflict((oc) =>
          oc.column('modelName').doUpdateSet({
            processingSeconds: sql`"modelTimings"."processingSeconds" + ${processingSeconds}`,
            audioSeconds: sql`"modelTimings"."audioSeconds" + ${audioSeconds}`,
            jobs: sql`"modelTimings"."jobs" + 1`,
            updatedAt,
          }),
        ),
    );
  }

  /** Seconds of processing per minute of audio, by model name (models never run are absent). */
  async secondsPerMinute(): Promise<Map<string, number>> {
    const rows = await this.#store.all(this.#store.db.selectFrom('modelTimings').select(['modelName', 'processingSeconds', 'audioSeconds']));
    return new Map(rows.map((row) => [row.modelName, roundTenth((60 * Number(row.processingSeconds)) / Number(row.audioSeconds))]));
  }
}

function roundTenth(value: number): number {
  return Math.round(value * 10) / 10;
}
