/** Kill -9 the server mid-job, start it again: the job finishes, nothing is charged twice. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { writeSong } from './support/audio.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { tempDir } from './support/server.js';

async function api(url: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${url}/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  });
  return { status: response.status, json: (await response.json()) as any };
}

test('a job interrupted by SIGKILL is resumed after restart and succeeds once', async () => {
  const dataDir = tempDir();
  const env = { STEMSPLIT_DATA_DIR: dataDir };
  const created = runCli(['keys', 'create', '--json'], env);
  assert.equal(created.status, 0, created.stderr);
  const { key } = JSON.parse(created.stdout) as { key: string };
  writeSong(join(dataDir, 'long.wav'), 90);
  const bytes = readFileSync(join(dataDir, 'long.wav'));

  let server = await startServeProcess([], env);
  const reserved = await api(server.url, key, 'POST', '/audio/uploads', { filename: 'long.wav', contentType: 'audio/wav', contentLength: bytes.length });
  const { uploadUrl, uploadHeaders, uploadId } = reserved.json.data;
  const sent = (await (await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: bytes })).json()) as any;
  const split = await api(server.url, key, 'POST', '/audio/splits', {
    input: { type: 'uploaded_file', uploadId, fileUrl: sent.data.url, storageKey: sent.data.key },
    stemModel: '4s',
  });
  assert.equal(split.status, 200);
  const id = split.json.data.id as string;

  // Wait until the worker is inside the job, then kill the process without warning.
  for (;;) {
    const state = await api(server.url, key, 'GET', `/audio/splits/${id}`);
    if (state.json.data.status === 'processing') break;
    assert.equal(state.json.data.status, 'queued', 'the job must not finish before the kill');
    await new Promise((r) => setTimeout(r, 20));
  }
  await killHard(server.child);

  server = await startServeProcess([], env);
  try {
    let final;
    for (let i = 0; i < 1200; i++) {
      final = await api(server.url, key, 'GET', `/audio/splits/${id}`);
      if (final.json.data.status === 'succeeded' || final.json.data.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.ok(final);
    assert.equal(final.json.data.status, 'succeeded', JSON.stringify(final.json.data.error));
    for (const url of Object.values(final.json.data.stems as Record<string, string>)) {
      assert.equal((await fetch(url)).status, 200);
    }
    const credits = await api(server.url, key, 'GET', '/credits');
    assert.equal(credits.json.data.balance, 3600 - 90, 'charged exactly once');
  } finally {
    await killHard(server.child);
  }
});
