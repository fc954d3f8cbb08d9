/** Signed webhooks: delivered, verified, retried after a 500, sent for failed jobs too, kept across restarts. */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { startTestServer, tempDir, uploadFile, waitForSplit, type TestServer } from './support/server.js';
import { until } from './support/wait.js';
import { receiver, verifySignature, type Received } from './support/webhook-receiver.js';

let t: TestServer;
let song: Buffer;
let secret: string;

before(async () => {
  const dir = tempDir();
  writeSong(join(dir, 'song.wav'), 2);
  song = readFileSync(join(dir, 'song.wav'));
  // Webhook receivers here listen on loopback, so this server lets webhooks reach private addresses.
  t = await startTestServer({ allowPrivateUrls: true }, { webhookBackoff: () => 200 });
  secret = await t.server.data.accounts.rotateWebhookSecret('default');
});
after(() => t.close());

test('a succeeded job is delivered, signed, and retried after the receiver first answers 500', async () => {
  const hook = await receiver([500]);
  try {
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl: hook.url } });
    assert.equal(created.status, 200, created.text);
    await waitForSplit(t, created.json.data.id);
    await until(() => hook.received.length >= 2);
    const [first, second] = hook.received as [Received, Received];
    assert.equal(first.body, second.body, 'a retry sends the same body');
    assert.equal(first.headers['stemsplit-delivery'], second.headers['stemsplit-delivery'], 'and the same delivery id');
    assert.match(String(first.headers['stemsplit-delivery']), /^whd_/);
    for (const delivery of [first, second]) {
      assert.ok(verifySignature(String(delivery.headers['stemsplit-signature']), delivery.body, secret), 'signature verifies');
      assert.equal(verifySignature(String(delivery.headers['stemsplit-signature']), delivery.body, 'whsec_wrong'), false);
      assert.equal(verifySignature(String(delivery.headers['stemsplit-signature']), `${delivery.body} `, secret), false);
    }
    const event = JSON.parse(second.body);
    assert.equal(event.event, 'audio.split.completed');
    assert.equal(event.data.id, created.json.data.id);
    assert.equal(event.data.status, 'succeeded');
    assert.deepEqual(Object.keys(event.data.stems).sort(), ['bass', 'drums', 'other', 'vocals']);
    await until(async () => (await t.server.data.deliveries.forSplit(created.json.data.id))[0]?.status === 'delivered');
    const [delivery] = await t.server.data.deliveries.forSplit(created.json.data.id);
    assert.equal(delivery?.attempts, 2);
  } finally {
    hook.server.close();
  }
});

test('a failed job is delivered with its error, and its credits are refunded', async () => {
  // A model whose ONNX file is corrupt: every job on it fails while separating.
  const modelsDir = tempDir();
  mkdirSync(join(modelsDir, 'broken'));
  writeFileSync(join(modelsDir, 'broken', 'broken.onnx'), 'not an onnx graph');
  writeFileSync(
    join(modelsDir, 'broken', 'model.json'),
    JSON.stringify({
      format: 'stemsplit-model/1',
      name: 'broken',
      description: 'corrupt on purpose',
      sampleRate: 44100,
      sources: ['drums', 'bass', 'other', 'vocals'],
      segmentSamples: 44100,
      overlap: 0.25,
      normalize: false,
      input: 'waveform',
      onnx: 'broken.onnx',
    }),
  );
  const broken = await startTestServer(
    { allowPrivateUrls: true, bundledModelsDir: modelsDir, modelAliases: { '4s': ['broken'], '6s': ['broken'] } },
    { webhookBackoff: () => 200 },
  );
  const hook = await receiver([]);
  try {
    const brokenSecret = await broken.server.data.accounts.rotateWebhookSecret('default');
    const balance = (await broken.request('GET', '/credits')).json.data.balance;
    const input = await uploadFile(broken, song);
    const created = await broken.request('POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl: hook.url } });
    assert.equal(created.status, 200, created.text);
    const done = await waitForSplit(broken, created.json.data.id);
    assert.equal(done.json.data.status, 'failed');
    assert.equal(done.json.data.error.code, 'SEPARATION_FAILED');
    assert.equal(done.json.data.stems, undefined);
    await until(() => hook.received.length >= 1);
    const delivery = hook.received[0] as Received;
    assert.ok(verifySignature(String(delivery.headers['stemsplit-signature']), delivery.body, brokenSecret));
    const event = JSON.parse(delivery.body);
    assert.equal(event.data.status, 'failed');
    assert.equal(event.data.error.code, 'SEPARATION_FAILED');
    assert.equal((await broken.request('GET', '/credits')).json.data.balance, balance, 'the failed job was refunded');
    const totals = await broken.server.data.accounts.ledgerTotals('default');
    assert.equal(totals.refund, 2);
  } finally {
    hook.server.close();
    await broken.close();
  }
});

test('pending deliveries survive a restart and are sent by the next server', async () => {
  const dataDir = tempDir();
  const hook = await receiver([500, 500, 500, 500, 500, 500, 500, 500, 500, 500]);
  const first = await startTestServer({ dataDir, allowPrivateUrls: true }, { webhookBackoff: () => 60_000 });
  const input = await uploadFile(first, song);
  const created = await first.request('POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl: hook.url } });
  await waitForSplit(first, created.json.data.id);
  await until(() => hook.received.length >= 1);
  await first.close();
  hook.received.length = 0;
  // Restart; make the pending delivery due now, as time passing would.
  const second = await startTestServer({ dataDir, allowPrivateUrls: true }, { webhookBackoff: () => 100 });
  try {
    await second.server.data.store.run(second.server.data.store.db.updateTable('webhookDeliveries').set({ nextAttemptAtMs: 0 }));
    second.server.webhooks.kick();
    await until(() => hook.received.length >= 1);
    assert.equal(JSON.parse(hook.received[0]?.body ?? '{}').data.id, created.json.data.id);
  } finally {
    await second.close();
    hook.server.close();
  }
});
