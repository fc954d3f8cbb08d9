/**
 * Crash faults: submit jobs through the API while `stemsplit serve` is killed with SIGKILL at
 * random moments and restarted over the same data dir, as a supervisor would. The client behaves
 * like a careful API client: it retries through outages with the same Idempotency-Key.
 * When it settles, it checks: every job terminal, exactly one job per key, the ledger balances
 * with one charge per job and one refund per failed job, every succeeded job's stems download,
 * every terminal job's webhook arrived at least once with a valid signature, and no half-written
 * file is left behind.
 *
 *   node --import tsx scripts/reliability/faults.ts [--jobs 100] [--kills 10] [--seed N] [--json]
 *   node --import tsx scripts/reliability/faults.ts --quick      # 20 jobs, 3 kills
 *
 * Webhooks go to a receiver on loopback, so the server runs with --allow-private-urls.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../temp-dir.js';
import {
  api,
  auditLedger,
  checkStems,
  leftoverPartials,
  provision,
  queryDb,
  seededRandom,
  ServeProcess,
  sleep,
  table,
  tidyUp,
  upload,
  waitWebhooks,
  WebhookReceiver,
  writeSong,
  type LedgerAudit,
} from './common.js';

export interface FaultOptions {
  readonly jobs: number;
  readonly kills: number;
  readonly seed: number;
  /** Clients submitting at once. */
  readonly clients?: number;
  /** Random pause before each kill, in ms: [min, max). Default: spread over the expected run. */
  readonly killGapMs?: readonly [number, number];
  /** Job i is submitted no earlier than i × paceMs after the start, like traffic, so kills land mid-request too. */
  readonly paceMs?: number;
  readonly log?: (line: string) => void;
}

export interface FaultReport {
  readonly jobs: number;
  readonly kills: number;
  readonly killsWhileProcessing: number;
  /** Kills that landed while a client request (upload or create) was in flight. */
  readonly killsMidRequest: number;
  readonly starts: number;
  readonly succeeded: number;
  readonly failed: Readonly<Record<string, number>>;
  /** Jobs that were running when the server died at least once (attempts > 1). */
  readonly interruptedJobs: number;
  readonly clientRetries: number;
  readonly idempotentReplays: number;
  readonly webhookDeliveries: number;
  readonly webhookDuplicates: number;
  readonly stemsDownloaded: number;
  readonly ledger: LedgerAudit;
  readonly settleSeconds: number;
  readonly wallSeconds: number;
  /** Every broken promise, in words; empty is a pass. */
  readonly problems: string[];
}

const SERVE_ARGS = ['--allow-private-urls', '--rate-limit', '1000000'];

export async function runFaults(options: FaultOptions): Promise<FaultReport> {
  const log = options.log ?? (() => undefined);
  const random = seededRandom(options.seed);
  const started = Date.now();
  const dataDir = tempDir('stemsplit-faults-');
  const songs = [1, 1.5, 2].map((seconds) => {
    const path = join(dataDir, `song-${seconds}.wav`);
    writeSong(path, seconds);
    return readFileSync(path);
  });
  const { key, secret } = provision(dataDir);
  const receiver = new WebhookReceiver(secret);
  const webhookUrl = await receiver.listen();
  const server = new ServeProcess(dataDir, SERVE_ARGS);
  await server.start();
  const problems: string[] = [];
  let clientRetries = 0;
  let idempotentReplays = 0;
  let inFlight = 0;

  /** One job, submitted until the API answers with a job (or a 4xx that is final). */
  const submit = async (index: number): Promise<string | undefined> => {
    const bytes = songs[index % songs.length] as Buffer;
    const headers = { 'idempotency-key': `faults-job-${index}` };
    let body: object | undefined;
    for (let attempt = 0; attempt < 200; attempt++) {
      inFlight++;
      try {
        body ??= { input: await upload(server.url, key, bytes, `job-${index}.wav`), stemModel: '4s', webhookUrl };
        const created = await api(server.url, key, 'POST', '/audio/splits', { body, headers });
        if (created.headers.get('idempotent-replayed') === 'true') idempotentReplays++;
        if (created.status === 200) return created.json.data.id as string;
        if (created.status < 500) {
          problems.push(`job ${index}: POST /audio/splits answered ${created.status}: ${created.text}`);
          return undefined;
        }
      } catch {
        // The server is down or died mid-request: wait and retry, with the same Idempotency-Key.
      } finally {
        inFlight--;
      }
      clientRetries++;
      await sleep(100 + 100 * Math.min(attempt, 10));
    }
    problems.push(`job ${index}: never accepted`);
    return undefined;
  };

  const ids: string[] = [];
  let next = 0;
  const submitting = Promise.all(
    Array.from({ length: options.clients ?? 4 }, async () => {
      while (next < options.jobs) {
        const index = next++;
        await sleep(started + index * (options.paceMs ?? 900) - Date.now());
        const id = await submit(index);
        if (id) ids.push(id);
      }
    }),
  );

  // The killer: SIGKILL at a random moment, restart at once, until enough kills were made.
  // By default the kills are spread over the whole run (about 1.5 s a job on 2 cores).
  const meanGap = (options.jobs * 1500) / options.kills;
  const [gapMin, gapMax] = options.killGapMs ?? [0.2 * meanGap, 1.8 * meanGap];
  let killsWhileProcessing = 0;
  let killsMidRequest = 0;
  for (let kill = 0; kill < options.kills; kill++) {
    await sleep(gapMin + random() * (gapMax - gapMin));
    if (server.exit) problems.push(`the server exited by itself (${JSON.stringify(server.exit)}) before kill ${kill + 1}`);
    const processing = queryDb<{ n: number }>(dataDir, `SELECT COUNT(*) AS n FROM splits WHERE status = 'processing'`)[0]?.n ?? 0;
    if (processing > 0) killsWhileProcessing++;
    if (inFlight > 0) killsMidRequest++;
    await server.kill();
    log(`kill ${kill + 1}/${options.kills}: ${ids.length} jobs accepted, ${processing} processing`);
    await server.start();
  }
  await submitting;

  const settleStarted = Date.now();
  const views = await server.client(key).waitForSplits(ids, 300_000 + options.jobs * 5_000);
  const notTerminal = ids.filter((id) => !['succeeded', 'failed'].includes(views.get(id)?.status ?? ''));
  if (notTerminal.length > 0) problems.push(`${notTerminal.length} jobs not terminal: ${notTerminal.slice(0, 5).join(', ')}`);
  const missingHooks = await waitWebhooks(receiver, ids, 60_000);
  const settleSeconds = (Date.now() - settleStarted) / 1000;
  if (missingHooks.length > 0) problems.push(`${missingHooks.length} terminal jobs without a valid webhook: ${missingHooks.slice(0, 5).join(', ')}`);

  // Exactly one job per Idempotency-Key, and nothing else created.
  if (new Set(ids).size !== ids.length) problems.push('two keys answered with the same job');
  const jobRows = queryDb<{ id: string; status: string; attempts: number; errorCode: string | null }>(
    dataDir,
    'SELECT id, status, attempts, errorCode FROM splits',
  );
  if (jobRows.length !== options.jobs) problems.push(`${jobRows.length} jobs in the database for ${options.jobs} keys`);

  const invalid = receiver.received.filter((d) => !d.valid);
  if (invalid.length > 0) problems.push(`${invalid.length} webhook deliveries with an invalid signature`);
  for (const [id, deliveries] of receiver.validBySplit()) {
    const final = views.get(id)?.status;
    if (deliveries.some((d) => d.status !== final)) problems.push(`${id}: webhook says ${deliveries[0]?.status}, job is ${final}`);
  }

  let stemsDownloaded = 0;
  for (const [id, view] of views) {
    if (view.status !== 'succeeded') continue;
    const stemProblems = await checkStems(view.stems, 4);
    if (stemProblems.length > 0) problems.push(`${id}: ${stemProblems.join('; ')}`);
    else stemsDownloaded += 4;
  }

  const ledger = auditLedger(dataDir);
  problems.push(...ledger.problems);
  const credits = await api(server.url, key, 'GET', '/credits');
  if (credits.json?.data?.balance !== ledger.balance) problems.push(`GET /credits says ${credits.json?.data?.balance}, the ledger ${ledger.balance}`);
  const partials = leftoverPartials(dataDir);
  if (partials.length > 0) problems.push(`half-written files left: ${partials.join(', ')}`);
  if (server.errorLines().length > 0) problems.push(`the server logged 5xx errors:\n${server.errorLines().slice(0, 5).join('\n')}`);

  await server.kill();
  await receiver.close();

  const failed: Record<string, number> = {};
  for (const row of jobRows) if (row.status === 'failed') failed[row.errorCode ?? '?'] = (failed[row.errorCode ?? '?'] ?? 0) + 1;
  const deliveredIds = receiver.received.filter((d) => d.valid).map((d) => d.deliveryId);
  tidyUp(dataDir, problems);
  return {
    jobs: options.jobs,
    kills: options.kills,
    killsWhileProcessing,
    killsMidRequest,
    starts: server.starts,
    succeeded: jobRows.filter((r) => r.status === 'succeeded').length,
    failed,
    interruptedJobs: jobRows.filter((r) => r.attempts > 1).length,
    clientRetries,
    idempotentReplays,
    webhookDeliveries: deliveredIds.length,
    webhookDuplicates: deliveredIds.length - new Set(deliveredIds).size,
    stemsDownloaded,
    ledger,
    settleSeconds,
    wallSeconds: (Date.now() - started) / 1000,
    problems,
  };
}

export function formatFaults(r: FaultReport): string {
  return table(
    [
      'jobs',
      'SIGKILLs (while a job ran / mid-request)',
      'server starts',
      'succeeded',
      'failed',
      'jobs interrupted mid-run',
      'client retries',
      'webhooks (duplicates)',
      'stems downloaded',
      'ledger: grants − charges + refunds = balance',
      'wall',
    ],
    [
      [
        r.jobs,
        `${r.kills} (${r.killsWhileProcessing} / ${r.killsMidRequest})`,
        r.starts,
        r.succeeded,
        Object.entries(r.failed)
          .map(([code, n]) => `${n} ${code}`)
          .join(', ') || '0',
        r.interruptedJobs,
        r.clientRetries,
        `${r.webhookDeliveries} (${r.webhookDuplicates})`,
        r.stemsDownloaded,
        `${r.ledger.grants} − ${r.ledger.charges} + ${r.ledger.refunds} = ${r.ledger.balance}`,
        `${r.wallSeconds.toFixed(0)} s`,
      ],
    ],
  );
}
