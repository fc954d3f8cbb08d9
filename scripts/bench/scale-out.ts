/**
 * One box's figures for issue 17: jobs per hour with 1, 2 and 4 `stemsplit worker` processes on
 * PostgreSQL against one `serve` on SQLite, and the API's GET and POST throughput on each store.
 * Every server and worker is a child process (`serve`, `worker`), as an operator runs them.
 *
 *   node --import tsx scripts/bench/scale-out.ts [--jobs 12] [--song-seconds 10] [--workers 1,2,4] [--seconds 10]
 *
 * PostgreSQL: STEMSPLIT_TEST_DATABASE_URL, or a throwaway cluster started from Debian's server binaries.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { writeSong } from '../../test/support/audio.js';
import { ApiClient } from '../../test/support/client.js';
import { freshDatabase } from '../../test/support/postgres.js';
import { killHard, runCli, spawnCli, startServeProcess } from '../../test/support/process.js';
import { tempDir } from '../../test/support/temp-dir.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '12' },
    'song-seconds': { type: 'string', default: '10' },
    workers: { type: 'string', default: '1,2,4' },
    seconds: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
  },
});
const JOBS = Number(values.jobs);
const SONG_SECONDS = Number(values['song-seconds']);

interface Deployment {
  readonly label: string;
  readonly client: ApiClient;
  readonly key: string;
  stop(): Promise<void>;
}

/** `serve` over a fresh data dir: SQLite inside it, or a fresh PostgreSQL database; `workers` jobs in process. */
async function deploy(store: 'sqlite' | 'postgres', serveWorkers: number, workerProcesses: number): Promise<Deployment> {
  const dataDir = tempDir('stemsplit-bench-');
  const database = store === 'postgres' ? await freshDatabase() : undefined;
  const env: Record<string, string> = { STEMSPLIT_DATA_DIR: dataDir, ...(database ? { STEMSPLIT_DATABASE_URL: database.url } : {}) };
  const { key } = JSON.parse(runCli(['keys', 'create', '--json'], env).stdout) as { key: string };
  runCli(['credits', 'grant', '1000000'], env);
  const server = await startServeProcess(['--rate-limit', '1000000', '--workers', String(serveWorkers)], env);
  const workers: ChildProcess[] = [];
  for (let i = 0; i < workerProcesses; i++) workers.push(spawnCli(['worker', '--concurrency', '1'], env));
  const label =
    store === 'sqlite'
      ? `SQLite, one serve (${serveWorkers} job at a time)`
      : `PostgreSQL, serve --workers 0 + ${workerProcesses} worker process${workerProcesses === 1 ? '' : 'es'}`;
  return {
    label,
    client: new ApiClient(server.url, key),
    key,
    stop: async () => {
      await Promise.all([server.child, ...workers].map(killHard));
      await database?.drop();
    },
  };
}

async function jobsPerHour(deployment: Deployment, song: Buffer): Promise<{ seconds: number; perHour: number; failed: number }> {
  const inputs = [];
  for (let i = 0; i < JOBS; i++) inputs.push(await deployment.client.upload(song));
  const started = Date.now();
  const ids: string[] = [];
  for (const input of inputs) {
    const created = await deployment.client.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    if (created.status !== 200) throw new Error(`create failed: ${created.text}`);
    ids.push(created.json.data.id);
  }
  let failed = 0;
  for (const id of ids) {
    const done = await deployment.client.waitForSplit(id, { timeoutMs: 1_800_000 });
    if (done.json.data.status !== 'succeeded') failed++;
  }
  const seconds = (Date.now() - started) / 1000;
  return { seconds, perHour: (JOBS / seconds) * 3600, failed };
}

async function throughput(deployment: Deployment, song: Buffer, runsJobs: boolean): Promise<{ get: autocannon.Result; post: autocannon.Result }> {
  const auth = { authorization: `Bearer ${deployment.key}`, 'content-type': 'application/json' };
  const input = await deployment.client.upload(song);
  const created = await deployment.client.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
  const id = created.json.data.id as string;
  if (runsJobs) await deployment.client.waitForSplit(id, { timeoutMs: 120_000 });
  const common = { connections: Number(values.connections), duration: Number(values.seconds), headers: auth };
  const get = await autocannon({ ...common, url: `${deployment.client.base}/audio/splits/${id}` });
  const post = await autocannon({
    ...common,
    url: `${deployment.client.base}/audio/uploads`,
    method: 'POST',
    body: JSON.stringify({ filename: 'song.wav', contentType: 'audio/wav', contentLength: 1000 }),
  });
  return { get, post };
}

const songDir = tempDir('stemsplit-bench-song-');
writeSong(join(songDir, 'song.wav'), SONG_SECONDS);
const song = readFileSync(join(songDir, 'song.wav'));

console.log(`Jobs per hour: ${JOBS} jobs of a ${SONG_SECONDS}-s song, bundled 4s model, all created at once, timed until the last is done`);
console.log('| deployment | wall time | jobs per hour | failed |');
console.log('|---|---|---|---|');
const queueRuns: Array<() => Promise<Deployment>> = [
  () => deploy('sqlite', 1, 0),
  ...values.workers.split(',').map((n) => () => deploy('postgres', 0, Number(n))),
];
for (const start of queueRuns) {
  const deployment = await start();
  try {
    const { seconds, perHour, failed } = await jobsPerHour(deployment, song);
    console.log(`| ${deployment.label} | ${seconds.toFixed(1)} s | ${perHour.toFixed(0)} | ${failed} |`);
  } finally {
    await deployment.stop();
  }
}

console.log();
console.log(`API throughput: autocannon, ${values.connections} connections, ${values.seconds} s each; the serve runs no jobs meanwhile`);
console.log('| store | GET /v1/audio/splits/{id} req/s | p50 / p99 | POST /v1/audio/uploads req/s | p50 / p99 | non-2xx or errors |');
console.log('|---|---|---|---|---|---|');
for (const store of ['sqlite', 'postgres'] as const) {
  // No job runs during the measurement: the one split made for the GET waits for a worker (none on PostgreSQL; SQLite's serve runs it first).
  const deployment = await deploy(store, store === 'sqlite' ? 1 : 0, 0);
  try {
    const { get, post } = await throughput(deployment, song, store === 'sqlite');
    const bad = get.non2xx + get.errors + post.non2xx + post.errors;
    console.log(
      `| ${store === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${get.requests.average.toFixed(0)} | ${get.latency.p50} / ${get.latency.p99} ms | ${post.requests.average.toFixed(0)} | ${post.latency.p50} / ${post.latency.p99} ms | ${bad} |`,
    );
  } finally {
    await deployment.stop();
  }
}
process.exit(0);
