/**
 * Queue behaviour: submit many jobs at once to one `stemsplit serve` (one job at a time) and
 * watch it drain. Checks that the server's memory stays flat while the queue drains and that
 * jobs run and finish in the order they were created (and their webhooks arrive in that order).
 *
 *   node --import tsx scripts/reliability/queue.ts [--queued 200] [--json]
 *   node --import tsx scripts/reliability/queue.ts --quick          # 30 jobs
 *
 * Webhooks go to a receiver on loopback, so the server runs with --allow-private-urls.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../temp-dir.js';
import {
  api,
  auditLedger,
  provision,
  queryDb,
  ServeProcess,
  sleep,
  table,
  tidyUp,
  upload,
  waitWebhooks,
  WebhookReceiver,
  writeSong,
  type UploadedInput,
} from './common.js';

export interface QueueOptions {
  /** Jobs waiting at once to reach: jobs are created until this many are queued or running. */
  readonly queued: number;
  readonly log?: (line: string) => void;
}

export interface RssSample {
  readonly done: number;
  readonly rssMb: number;
}

export interface QueueReport {
  readonly jobs: number;
  /** Jobs waiting (queued or running) when the last one was created: the depth the queue reached. */
  readonly peakQueued: number;
  readonly succeeded: number;
  /** RSS when 10 % of the jobs were done (warm), then at the end, and the highest seen. */
  readonly rssWarmMb: number;
  readonly rssEndMb: number;
  readonly rssPeakMb: number;
  /** Least-squares slope of RSS over jobs done, after the first 10 %. */
  readonly rssSlopeMbPer100Jobs: number;
  readonly samples: readonly RssSample[];
  readonly finishedInOrder: boolean;
  readonly webhooksInOrder: boolean;
  readonly secondsPerJob: number;
  readonly problems: string[];
}

export async function runQueue(options: QueueOptions): Promise<QueueReport> {
  const log = options.log ?? (() => undefined);
  const dataDir = tempDir('stemsplit-queue-');
  const songPath = join(dataDir, 'song.wav');
  writeSong(songPath, 1);
  const song = readFileSync(songPath);
  const { key, secret } = provision(dataDir);
  const receiver = new WebhookReceiver(secret);
  const webhookUrl = await receiver.listen();
  const server = new ServeProcess(dataDir, ['--allow-private-urls', '--rate-limit', '1000000']);
  await server.start();
  const problems: string[] = [];
  const countDone = () => queryDb<{ n: number }>(dataDir, `SELECT COUNT(*) AS n FROM splits WHERE status IN ('succeeded', 'failed')`)[0]?.n ?? 0;

  try {
    // Upload first (uploads make no jobs), then create jobs one after another, as fast as the API
    // takes them, until `queued` are waiting at once (the worker finishes some meanwhile).
    const inputs: UploadedInput[] = [];
    const spare = Math.ceil(options.queued * 1.5);
    for (let i = 0; i < spare; i += 8) {
      inputs.push(...(await Promise.all(Array.from({ length: Math.min(8, spare - i) }, (_, j) => upload(server.url, key, song, `q${i + j}.wav`)))));
    }
    const ids: string[] = [];
    for (const input of inputs) {
      if (ids.length - countDone() >= options.queued) break;
      const created = await api(server.url, key, 'POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl } });
      if (created.status !== 200) throw new Error(`create answered ${created.status}: ${created.text}`);
      ids.push(created.json.data.id as string);
    }
    const jobs = ids.length;
    const peakQueued = jobs - countDone();
    log(`${jobs} jobs created, ${peakQueued} waiting`);

    const started = Date.now();
    const samples: RssSample[] = [];
    for (let done = countDone(); done < jobs; done = countDone()) {
      samples.push({ done, rssMb: (server.rssKb() ?? 0) / 1024 });
      if (Date.now() - started > jobs * 30_000) throw new Error(`the queue did not drain: ${done}/${jobs} done`);
      if (samples.length % 40 === 0) log(`${done}/${jobs} done, RSS ${samples.at(-1)?.rssMb.toFixed(0)} MB`);
      await sleep(500);
    }
    samples.push({ done: jobs, rssMb: (server.rssKb() ?? 0) / 1024 });
    const secondsPerJob = (Date.now() - started) / 1000 / Math.max(1, peakQueued);
    const missing = await waitWebhooks(receiver, ids, 60_000);
    if (missing.length > 0) problems.push(`${missing.length} jobs without a webhook`);

    // Order: ids are time-sorted and were created one after another, so id order is creation order.
    const rows = queryDb<{ id: string; status: string; finishedAtMs: number }>(dataDir, 'SELECT id, status, finishedAtMs FROM splits ORDER BY id');
    const finishedInOrder = rows.every((row, i) => i === 0 || row.finishedAtMs >= (rows[i - 1] as typeof row).finishedAtMs);
    if (!finishedInOrder) problems.push('jobs finished out of creation order');
    const hookOrder = [...new Map(receiver.received.filter((d) => d.valid).map((d) => [d.splitId, d.receivedAtMs])).keys()];
    const webhooksInOrder = hookOrder.join() === ids.join();
    if (!webhooksInOrder) problems.push('webhooks arrived out of creation order');
    const succeeded = rows.filter((r) => r.status === 'succeeded').length;
    if (succeeded !== jobs) problems.push(`${jobs - succeeded} jobs failed`);

    const warm = samples.filter((s) => s.done >= jobs / 10);
    const slope = leastSquaresSlope(warm.map((s) => [s.done, s.rssMb]));
    const report = {
      jobs,
      peakQueued,
      succeeded,
      rssWarmMb: warm[0]?.rssMb ?? NaN,
      rssEndMb: samples.at(-1)?.rssMb ?? NaN,
      rssPeakMb: Math.max(...samples.map((s) => s.rssMb)),
      rssSlopeMbPer100Jobs: slope * 100,
      samples,
      finishedInOrder,
      webhooksInOrder,
      secondsPerJob,
      problems,
    };
    await server.kill();
    problems.push(...auditLedger(dataDir).problems);
    tidyUp(dataDir, problems);
    return report;
  } finally {
    await server.kill();
    await receiver.close();
  }
}

function leastSquaresSlope(points: ReadonlyArray<readonly [number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  return sxx === 0 ? 0 : sxy / sxx;
}

export function formatQueue(r: QueueReport): string {
  return table(
    ['jobs', 'waiting at once', 'succeeded', 'RSS warm → end (peak)', 'RSS slope', 'finished in creation order', 'webhooks in order', 's per job'],
    [
      [
        r.jobs,
        r.peakQueued,
        r.succeeded,
        `${r.rssWarmMb.toFixed(0)} → ${r.rssEndMb.toFixed(0)} MB (${r.rssPeakMb.toFixed(0)} MB)`,
        `${r.rssSlopeMbPer100Jobs >= 0 ? '+' : ''}${r.rssSlopeMbPer100Jobs.toFixed(1)} MB / 100 jobs`,
        r.finishedInOrder ? 'yes' : 'NO',
        r.webhooksInOrder ? 'yes' : 'NO',
        r.secondsPerJob.toFixed(2),
      ],
    ],
  );
}
