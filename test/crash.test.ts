/** Kill -9 the server mid-job, start it again: the job finishes, nothing is charged twice; one serve per data dir. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { tempDir } from './support/server.js';
import { until } from './support/wait.js';

/** A fresh data dir with an API key, and a song of `seconds` in it. */
function dataDirWithSong(name: string, seconds: number) {
  const dataDir = tempDir();
  const env = { STEMSPLIT_DATA_DIR: dataDir };
  const created = runCli(['keys', 'create', '--json'], env);
  assert.equal(created.status, 0, created.stderr);
  const { key } = JSON.parse(created.stdout) as { key: string };
  writeSong(join(dataDir, name), seconds);
  return { dataDir, env, key, bytes: readFileSync(join(dataDir, name)) };
}

test('a job interrupted by SIGKILL is resumed after restart and succeeds once', async () => {
  const { dataDir, env, key, bytes } = dataDirWithSong('long.wav', 90);

  let server = await startServeProcess([], env);
  const client = new ApiClient(() => server.url, key);
  const split = await client.request('POST', '/audio/splits', { body: { input: await client.upload(bytes, 'long.wav'), stemModel: '4s' } });
  assert.equal(split.status, 200);
  const id = split.json.data.id as string;

  // Wait until the worker is inside the job, then kill the process without warning.
  const started = await client.waitForSplit(id, { until: (job) => job.status !== 'queued', everyMs: 20 });
  assert.equal(started.json.data.status, 'processing', 'the job must not finish before the kill');
  await killHard(server.child);

  server = await startServeProcess([], env);
  try {
    const final = await client.waitForSplit(id);
    assert.ok(final);
    assert.equal(final.json.data.status, 'succeeded', JSON.stringify(final.json.data.error));
    for (const url of Object.values(final.json.data.stems as Record<string, string>)) {
      assert.equal((await fetch(url)).status, 200);
    }
    const credits = await client.request('GET', '/credits');
    assert.equal(credits.json.data.balance, 3600 - 90, 'charged exactly once');
  } finally {
    await killHard(server.child);
  }
});

test('a second serve on a running server’s data dir refuses in one line and leaves its upload in flight alone; a killed server leaves no stale lock', async () => {
  const { dataDir, env, key, bytes } = dataDirWithSong('song.wav', 2);

  const first = await startServeProcess([], env);
  const client = new ApiClient(first.url, key);
  try {
    const { uploadUrl, uploadHeaders } = await client.reserveUpload(bytes.length);
    // Half the bytes now, the rest once the second serve has come and gone.
    let sendRest!: () => void;
    const restAllowed = new Promise<void>((resolve) => (sendRest = resolve));
    const body = new ReadableStream<Uint8Array>({
      async start(controller) {
        controller.enqueue(bytes.subarray(0, bytes.length >> 1));
        await restAllowed;
        controller.enqueue(bytes.subarray(bytes.length >> 1));
        controller.close();
      },
    });
    const sent = fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body, duplex: 'half' } as RequestInit);
    await until(() => readdirSync(join(dataDir, 'uploads')).some((name) => name.includes('.partial')), 10_000);

    const second = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', 'serve', '--port', '0'], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: { ...process.env, ...env },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(second.status, 15, `the second serve must exit at once: ${second.stderr}`);
    assert.equal(second.stderr, `stemsplit: another stemsplit serve is using the data dir ${dataDir}; stop it, or give this one its own --data-dir\n`);

    sendRest();
    const response = await sent;
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal((await client.request('GET', '/credits')).status, 200, 'the first server still serves');
  } finally {
    await killHard(first.child);
  }
  // SIGKILL gave no chance to unlock; the OS dropped the lock with the process.
  const again = await startServeProcess([], env);
  await killHard(again.child);
});
