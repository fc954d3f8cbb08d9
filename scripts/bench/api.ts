/**
 * GET /v1/audio/splits/{id} throughput and latency, measured with autocannon against a running
 * `stemsplit serve` (a child process, so the load generator does not share its event loop).
 *
 *   node --import tsx scripts/bench/api.ts [--seconds 10] [--connections 10]
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { writeSong } from '../../test/support/audio.js';
import { ApiClient } from '../../test/support/client.js';
import { killHard, runCli, startServeProcess } from '../../test/support/process.js';
import { tempDir } from '../../test/support/temp-dir.js';

const { values } = parseArgs({
  options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '10' } },
});

const dataDir = tempDir('stemsplit-bench-');
const env = { STEMSPLIT_DATA_DIR: dataDir };
const { key } = JSON.parse(runCli(['keys', 'create', '--json'], env).stdout) as { key: string };
const server = await startServeProcess(['--rate-limit', '1000000'], env);
const auth = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

try {
  writeSong(join(dataDir, 'song.wav'), 5);
  const bytes = readFileSync(join(dataDir, 'song.wav'));
  const client = new ApiClient(server.url, key);
  const input = await client.upload(bytes);
  const created = await client.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
  const id = created.json.data.id as string;
  const done = await client.waitForSplit(id, { timeoutMs: 120_000 });
  if (done.json.data.status !== 'succeeded') throw new Error(`the split failed: ${done.text}`);

  const result = await autocannon({
    url: `${client.base}/audio/splits/${id}`,
    headers: auth,
    connections: Number(values.connections),
    duration: Number(values.seconds),
  });
  const non2xx = result.non2xx + result.errors;
  console.log(`GET /v1/audio/splits/{id} (succeeded job with 4 signed stem URLs), ${values.connections} connections, ${values.seconds} s`);
  console.log(`| requests/s (mean) | latency p50 | latency p99 | requests | non-2xx or errors |`);
  console.log(`|---|---|---|---|---|`);
  console.log(`| ${result.requests.average.toFixed(0)} | ${result.latency.p50} ms | ${result.latency.p99} ms | ${result.requests.total} | ${non2xx} |`);
} finally {
  await killHard(server.child);
}
