/**
 * A PostgreSQL outage in the server's log, as an operator reads it: one line per component when
 * it begins and one when it ends, whatever happens meanwhile (a job writing progress, refused API
 * requests, the webhook dispatcher polling); a refused request is never a stack trace. The outage
 * is a loopback relay to the test cluster, cut and restored.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from './support/audio.js';
import { freshDatabase, postgresSkipReason, relayTo } from './support/postgres.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { until } from './support/wait.js';

const skip = (await postgresSkipReason()) ?? false;

test('an outage is logged once per component, with one line when it ends, and no stack traces', { skip, timeout: 240_000 }, async () => {
  const database = await freshDatabase();
  const outage = await relayTo(new URL(database.url));
  const viaRelay = new URL(database.url);
  viaRelay.port = String(outage.port);
  const lines: string[] = [];
  const dataDir = tempDir();
  const node = await startTestServer({ dataDir, databaseUrl: viaRelay.toString(), concurrency: 1 }, { log: (line) => lines.push(line) });
  try {
    writeSong(join(dataDir, 'song.wav'), 90);
    const input = await uploadFile(node, readFileSync(join(dataDir, 'song.wav')));
    const created = await node.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    assert.equal(created.status, 200, created.text);
    const id = created.json.data.id as string;
    // Cut while the job is separating, so it goes on writing progress into the outage.
    await node.client
      .waitForSplit(id, { timeoutMs: 120_000, until: (split) => split.status === 'processing' && split.progress >= 1 })
      .catch(() => assert.fail(`the job never started: ${lines.join('\n')}`));
    await outage.cut();
    // The outage lasts until both the API (refusing requests) and the job runner (failing to record
    // progress) have noticed it and the API has refused several requests meanwhile.
    let refusals = 0;
    const noticed = (component: string) => lines.some((line) => line.startsWith(`${component}: `) && /unreachable/.test(line));
    await until(
      async () => {
        const refused = await node.request('GET', '/credits');
        assert.equal(refused.status, 503, refused.text);
        refusals++;
        return refusals >= 3 && noticed('api') && noticed('job runner');
      },
      120_000,
      () => `the outage was not noticed by the API and the job runner both:\n${lines.join('\n')}`,
    );
    await outage.restore();
    assert.equal((await waitForSplit(node, id, 180_000)).json.data.status, 'succeeded', lines.join('\n'));
    await until(
      () => lines.some((line) => line.startsWith('api: the database answers again')),
      10_000,
      () => lines.join('\n'),
    );
    await until(
      () => lines.some((line) => line.startsWith('job runner: the database answers again')),
      10_000,
      () => lines.join('\n'),
    );

    const log = lines.join('\n');
    assert.doesNotMatch(log, /\n\s+at /, 'no stack trace');
    assert.doesNotMatch(log, /progress not recorded/);
    for (const component of ['api', 'job runner']) {
      const own = lines.filter((line) => line.startsWith(`${component}: `));
      assert.equal(own.length, 2, `${component}: one line when the outage begins, one when it ends:\n${log}`);
      assert.match(own[0] ?? '', /PostgreSQL at postgres:\/\/\S+ is unreachable.*\(logged once; one more line when it is back\)$/);
      assert.match(own[1] ?? '', /the database answers again after \d+ s \(\d+ operations? failed meanwhile\)$/);
    }
    assert.ok(lines.filter((line) => line.startsWith('webhooks: ')).length <= 2, log);
    assert.ok(lines.filter((line) => line.startsWith('PostgreSQL connection lost')).length <= 1, log);
    assert.ok(lines.length <= 10, `a quiet log:\n${log}`);
  } finally {
    await outage.restore();
    await node.close();
    await outage.close();
    await database.drop();
  }
});
