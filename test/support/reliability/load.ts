/**
 * Load on loopback with autocannon against a `stemsplit serve` child process: throughput and
 * p50/p99 latency of GET /v1/audio/splits/{id}, of POST /v1/audio/splits (each request a fresh
 * upload, so each one probes audio and creates a job), and of 50 clients each repeating one
 * Idempotency-Key, which must end with exactly one job per key.
 *
 *   node --import tsx scripts/reliability/load.ts [--connections 50] [--seconds 10] [--posts 500] [--repeats 20] [--json]
 *   node --import tsx scripts/reliability/load.ts --quick
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { tempDir } from '../temp-dir.js';
import { api, auditLedger, cliJson, queryDb, ServeProcess, table, tidyUp, upload, writeSong, type LedgerAudit, type UploadedInput } from './common.js';

export interface LoadOptions {
  readonly connections: number;
  /** Duration of the GET run. */
  readonly seconds: number;
  /** Requests of the POST run (each needs its own upload). */
  readonly posts: number;
  /** Requests per client in the Idempotency-Key run. */
  readonly repeats: number;
  readonly log?: (line: string) => void;
}

export interface LoadFigure {
  readonly name: string;
  readonly connections: number;
  readonly requests: number;
  readonly requestsPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  /** Socket errors and timeouts (autocannon counts a timeout as an error too), by code. */
  readonly errors: number;
  readonly errorCodes: Readonly<Record<string, number>>;
  readonly serverRssMb: number;
}

export interface LoadReport {
  readonly figures: readonly LoadFigure[];
  readonly jobsFromPosts: number;
  readonly idempotencyKeys: number;
  readonly jobsFromIdempotentPosts: number;
  readonly ledger: LedgerAudit;
  readonly problems: string[];
}

const JSON_HEADERS = { 'content-type': 'application/json' };

export async function runLoad(options: LoadOptions): Promise<LoadReport> {
  const log = options.log ?? (() => undefined);
  const dataDir = tempDir('stemsplit-load-');
  const songPath = join(dataDir, 'song.wav');
  writeSong(songPath, 1);
  const song = readFileSync(songPath);
  const { key } = cliJson<{ key: string }>(dataDir, ['keys', 'create']);
  cliJson(dataDir, ['credits', 'grant', String(10 * (options.posts + options.connections) + 100)]);
  const server = new ServeProcess(dataDir, ['--rate-limit', '1000000']);
  await server.start();
  const auth = { authorization: `Bearer ${key}`, ...JSON_HEADERS };
  const problems: string[] = [];
  const figures: LoadFigure[] = [];
  const countJobs = () => queryDb<{ n: number }>(dataDir, 'SELECT COUNT(*) AS n FROM splits')[0]?.n ?? 0;

  const measure = async (name: string, connections: number, run: Partial<autocannon.Options>): Promise<autocannon.Result> => {
    log(`${name}…`);
    const errorCodes: Record<string, number> = {};
    const result = await new Promise<autocannon.Result>((resolve, reject) => {
      const instance = autocannon({ url: server.url, connections, ...run } as autocannon.Options, (error: unknown, done: autocannon.Result) =>
        error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(done),
      );
      instance.on('reqError', (error: Error & { code?: string }) => {
        const code = error.code ?? error.message;
        errorCodes[code] = (errorCodes[code] ?? 0) + 1;
      });
    });
    figures.push({
      name,
      connections,
      requests: result.requests.total,
      requestsPerSecond: result.requests.total / (result.duration || 1),
      p50Ms: result.latency.p50,
      p99Ms: result.latency.p99,
      non2xx: result.non2xx,
      errors: result.errors,
      errorCodes,
      serverRssMb: (server.rssKb() ?? 0) / 1024,
    });
    if (result.non2xx + result.errors > 0) {
      problems.push(`${name}: ${result.non2xx} non-2xx, ${result.errors} errors (${JSON.stringify(errorCodes)})`);
    }
    return result;
  };

  try {
    // A finished job to read.
    const first = await api(server.url, key, 'POST', '/audio/splits', { body: { input: await upload(server.url, key, song), stemModel: '4s' } });
    await server.client(key).waitForSplits([first.json.data.id], 120_000);
    await measure('GET /v1/audio/splits/{id}', options.connections, {
      url: `${server.url}/v1/audio/splits/${first.json.data.id}`,
      headers: auth,
      duration: options.seconds,
    });

    // POST: every request names its own, freshly uploaded file.
    const inputs = await uploadMany(server.url, key, song, options.posts + options.connections);
    let next = 0;
    const bodyOf = (input: UploadedInput | undefined) => JSON.stringify({ input, stemModel: '4s' });
    const jobsBefore = countJobs();
    const posted = await measure('POST /v1/audio/splits', options.connections, {
      url: `${server.url}/v1/audio/splits`,
      method: 'POST',
      headers: auth,
      amount: options.posts,
      // Each create probes its audio (an ffprobe process): under 50 at once on 2 cores some take
      // over autocannon's 10 s default, and a timed-out request would be re-sent with a used upload.
      timeout: 60,
      setupClient: (client) => {
        client.setBody(bodyOf(inputs[next++]));
        client.on('response', () => client.setBody(bodyOf(inputs[next++])));
      },
    });
    const jobsFromPosts = countJobs() - jobsBefore;
    if (jobsFromPosts !== posted.requests.total - posted.non2xx)
      problems.push(`${posted.requests.total - posted.non2xx} POSTs answered 2xx but ${jobsFromPosts} jobs exist`);

    // Idempotency: client i repeats key i with body i, over and over.
    const keyed = await uploadMany(server.url, key, song, options.connections);
    let clientIndex = 0;
    const jobsBeforeKeys = countJobs();
    await measure(`POST /v1/audio/splits, ${options.connections} clients each repeating one Idempotency-Key`, options.connections, {
      url: `${server.url}/v1/audio/splits`,
      method: 'POST',
      amount: options.connections * options.repeats,
      timeout: 60,
      setupClient: (client) => {
        const index = clientIndex++;
        client.setHeadersAndBody({ ...auth, 'idempotency-key': `load-key-${index}` }, bodyOf(keyed[index]));
      },
    });
    const jobsFromIdempotentPosts = countJobs() - jobsBeforeKeys;
    problems.push(...(await checkOneJobPerKey(server.url, key, keyed, dataDir)));
    if (jobsFromIdempotentPosts !== options.connections) problems.push(`${options.connections} Idempotency-Keys made ${jobsFromIdempotentPosts} jobs`);

    await server.kill();
    const ledger = auditLedger(dataDir);
    problems.push(...ledger.problems);
    if (server.errorLines().length > 0) problems.push(`the server logged errors: ${server.errorLines()[0]}`);
    tidyUp(dataDir, problems);
    return { figures, jobsFromPosts, idempotencyKeys: options.connections, jobsFromIdempotentPosts, ledger, problems };
  } finally {
    await server.kill();
  }
}

/** Uploads `count` copies of the song, 8 at a time. */
async function uploadMany(base: string, key: string, song: Buffer, count: number): Promise<UploadedInput[]> {
  const inputs: UploadedInput[] = [];
  for (let i = 0; i < count; i += 8) {
    const batch = Array.from({ length: Math.min(8, count - i) }, (_, j) => upload(base, key, song, `load-${i + j}-${randomBytes(3).toString('hex')}.wav`));
    inputs.push(...(await Promise.all(batch)));
  }
  return inputs;
}

/** Each key's stored response names one job, no two keys share a job, and a replay answers with it. */
async function checkOneJobPerKey(base: string, key: string, inputs: readonly UploadedInput[], dataDir: string): Promise<string[]> {
  const problems: string[] = [];
  const rows = queryDb<{ key: string; responseStatus: number; responseBody: string }>(
    dataDir,
    `SELECT key, responseStatus, responseBody FROM idempotencyKeys WHERE key LIKE 'load-key-%'`,
  );
  const jobOf = new Map(rows.map((r) => [r.key, (JSON.parse(r.responseBody) as { data: { id: string } }).data.id]));
  if (rows.length !== inputs.length) problems.push(`${rows.length} stored Idempotency-Keys for ${inputs.length} clients`);
  if (new Set(jobOf.values()).size !== jobOf.size) problems.push('two Idempotency-Keys share a job');
  for (const [index, input] of inputs.entries()) {
    const replay = await api(base, key, 'POST', '/audio/splits', { body: { input, stemModel: '4s' }, headers: { 'idempotency-key': `load-key-${index}` } });
    if (replay.headers.get('idempotent-replayed') !== 'true' || replay.json?.data?.id !== jobOf.get(`load-key-${index}`)) {
      problems.push(`load-key-${index}: the replay answered ${replay.status} ${replay.text}`);
    }
  }
  return problems;
}

export function formatLoad(r: LoadReport): string {
  return (
    table(
      ['scenario', 'connections', 'requests', 'requests/s', 'p50', 'p99', 'non-2xx / errors', 'server RSS after'],
      r.figures.map((f) => [
        f.name,
        f.connections,
        f.requests,
        f.requestsPerSecond.toFixed(0),
        `${f.p50Ms} ms`,
        `${f.p99Ms} ms`,
        `${f.non2xx} / ${f.errors}${
          f.errors > 0
            ? ` (${Object.entries(f.errorCodes)
                .map(([c, n]) => `${n} ${c}`)
                .join(', ')})`
            : ''
        }`,
        `${f.serverRssMb.toFixed(0)} MB`,
      ]),
    ) +
    `\n\njobs from the POST run: ${r.jobsFromPosts}; ${r.idempotencyKeys} Idempotency-Keys → ${r.jobsFromIdempotentPosts} jobs; ledger ${r.ledger.problems.length === 0 ? 'balanced' : 'NOT balanced'}`
  );
}
