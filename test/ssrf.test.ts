/**
 * SSRF protection of server-side fetches. No test here ever connects to a non-loopback address:
 * refused targets are refused before any socket opens, and where a name must resolve to a public
 * address, the dialer is replaced so the connection lands on a loopback sink.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isForbiddenAddress } from '../src/net/address.js';
import { downloadToFile, FetchRefused, guardedRequest, type Dialer } from '../src/net/fetch.js';
import { writeSong } from './support/audio.js';
import { startTestServer, tempDir, waitForSplit } from './support/server.js';

describe('the address check', () => {
  const refused = [
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fe80::1%eth0',
    'fc00::1',
    'fd12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:10.0.0.1',
    '::ffff:192.168.0.1',
    '::127.0.0.1',
    '64:ff9b::7f00:1',
    '2002:7f00:1::',
    '[::1]',
    'not-an-ip',
  ];
  const allowed = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '2606:4700:4700::1111', '::ffff:8.8.8.8', '172.32.0.1', '100.128.0.1'];
  for (const address of refused) test(`refuses ${address}`, () => assert.equal(isForbiddenAddress(address), true));
  for (const address of allowed) test(`allows ${address}`, () => assert.equal(isForbiddenAddress(address), false));
});

/** A loopback HTTP server standing in for "the internet"; counts connections. */
let sink: Server;
let sinkPort: number;
let sinkConnections = 0;
let sinkHandler: (url: string) => { status: number; headers?: Record<string, string>; body?: Buffer | string } = () => ({ status: 200, body: 'ok' });

/** Every connection, whatever address it was meant for, lands on the sink. */
const dialSink: Dialer = () => connect({ host: '127.0.0.1', port: sinkPort });

before(async () => {
  sink = createServer((req, res) => {
    const answer = sinkHandler(req.url ?? '/');
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
  sink.on('connection', () => sinkConnections++);
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkPort = (sink.address() as AddressInfo).port;
});
after(() => sink.close());

async function refusedWithoutConnecting(url: string, resolve?: (host: string) => Promise<string[]>): Promise<void> {
  const before = sinkConnections;
  await assert.rejects(
    guardedRequest(url, { allowPrivate: false, timeoutMs: 2000, dial: dialSink, ...(resolve ? { resolve } : {}) }),
    (error: unknown) => error instanceof FetchRefused,
  );
  assert.equal(sinkConnections, before, 'no connection may be opened for a refused target');
}

describe('guarded fetch refuses private targets by default', () => {
  const literalTargets = [
    'http://127.0.0.1/',
    'http://localhost/',
    'http://[::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a00:1]/',
    'http://10.0.0.1/',
    'http://192.168.0.10:8080/',
    'http://169.254.169.254/latest/meta-data/',
    // Other spellings of 127.0.0.1: decimal, octal, hex, short forms.
    'http://2130706433/',
    'http://0177.0.0.1/',
    'http://0x7f.0.0.1/',
    'http://0x7f000001/',
    'http://127.1/',
    'http://0/',
  ];
  for (const url of literalTargets) {
    test(`refuses ${url}`, async () => {
      // `localhost` resolves through the real resolver to loopback; everything else is a literal.
      await refusedWithoutConnecting(url);
    });
  }

  test('refuses names that resolve to private addresses', async () => {
    for (const address of ['10.1.2.3', '::1', '::ffff:192.168.1.1', 'fd00::5']) {
      await refusedWithoutConnecting('http://files.example.test/song.mp3', async () => [address]);
    }
  });

  test('refuses non-http schemes and credentials in URLs', async () => {
    for (const url of ['file:///etc/passwd', 'ftp://example.test/a', 'gopher://example.test/', 'http://user:pass@example.test/']) {
      await refusedWithoutConnecting(url, async () => ['93.184.216.34']);
    }
  });

  test('checks every redirect: a public host redirecting to a private one is refused', async () => {
    sinkHandler = () => ({ status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } });
    const before = sinkConnections;
    await assert.rejects(
      guardedRequest('http://public.example.test/song.mp3', { allowPrivate: false, timeoutMs: 2000, dial: dialSink, resolve: async () => ['93.184.216.34'] }),
      (error: unknown) => error instanceof FetchRefused && /169\.254/.test(error.message),
    );
    assert.equal(sinkConnections, before + 1, 'only the first, public hop connected');
  });

  test('a redirect to a name that resolves privately is refused too', async () => {
    sinkHandler = () => ({ status: 307, headers: { location: 'http://internal.example.test/admin' } });
    const resolve = async (host: string) => (host === 'internal.example.test' ? ['10.0.0.7'] : ['93.184.216.34']);
    await assert.rejects(
      guardedRequest('http://public.example.test/', { allowPrivate: false, timeoutMs: 2000, dial: dialSink, resolve }),
      (error: unknown) => error instanceof FetchRefused && /10\.0\.0\.7/.test(error.message),
    );
  });

  test('DNS rebinding: a resolver answering public, then private, is refused at the second connection', async () => {
    const answers = ['93.184.216.34', '127.0.0.1'];
    const resolve = async () => [answers.shift() ?? '127.0.0.1'];
    // The first connection (public answer) redirects back to the same host name.
    sinkHandler = () => ({ status: 302, headers: { location: 'http://rebind.example.test/again' } });
    const before = sinkConnections;
    await assert.rejects(
      guardedRequest('http://rebind.example.test/song.mp3', { allowPrivate: false, timeoutMs: 2000, dial: dialSink, resolve }),
      (error: unknown) => error instanceof FetchRefused && /127\.0\.0\.1/.test(error.message),
    );
    assert.equal(sinkConnections, before + 1);
  });

  test('at most 5 redirects', async () => {
    sinkHandler = (url) => ({ status: 302, headers: { location: `${url}x` } });
    await assert.rejects(
      guardedRequest('http://loop.example.test/', { allowPrivate: false, timeoutMs: 5000, dial: dialSink, resolve: async () => ['93.184.216.34'] }),
      (error: unknown) => error instanceof FetchRefused && /redirect/.test(error.message),
    );
  });

  test('downloads stop at the size cap and leave no file', async () => {
    sinkHandler = () => ({ status: 200, body: Buffer.alloc(200_000) });
    const dir = tempDir();
    await assert.rejects(
      downloadToFile('http://big.example.test/a.mp3', join(dir, 'a'), {
        allowPrivate: false,
        timeoutMs: 5000,
        maxBytes: 100_000,
        dial: dialSink,
        resolve: async () => ['93.184.216.34'],
      }),
      (error: unknown) => error instanceof FetchRefused,
    );
    const { readdirSync } = await import('node:fs');
    assert.deepEqual(readdirSync(dir), []);
  });
});

describe('direct_url through the API', () => {
  test('is refused for loopback by default (422, nothing charged)', async () => {
    const t = await startTestServer();
    try {
      const balance = (await t.request('GET', '/credits')).json.data.balance;
      const response = await t.request('POST', '/audio/splits', { body: { input: { type: 'direct_url', url: `http://127.0.0.1:${sinkPort}/song.wav` } } });
      assert.equal(response.status, 422);
      assert.equal(response.json.error.code, 'VALIDATION_ERROR');
      assert.match(response.json.error.message, /private or local/);
      assert.equal((await t.request('GET', '/credits')).json.data.balance, balance);
    } finally {
      await t.close();
    }
  });

  test('a webhookUrl on a private address is refused when the job is created', async () => {
    const t = await startTestServer();
    try {
      for (const webhookUrl of ['http://127.0.0.1:9/hook', 'http://[::1]/hook', 'http://10.0.0.8/hook', 'http://0x7f000001/hook']) {
        const response = await t.request('POST', '/audio/splits', {
          body: { input: { type: 'direct_url', url: 'http://203.0.113.9/song.mp3' }, webhookUrl },
        });
        assert.equal(response.status, 422, webhookUrl);
        assert.match(response.json.error.message, /webhookUrl/);
      }
    } finally {
      await t.close();
    }
  });

  test('works against a local HTTP server when private URLs are allowed (this test only)', async () => {
    const dir = tempDir();
    writeSong(join(dir, 'remote.wav'), 2.2);
    const bytes = readFileSync(join(dir, 'remote.wav'));
    sinkHandler = (url) => (url === '/music/remote.wav' ? { status: 200, headers: { 'content-type': 'audio/wav' }, body: bytes } : { status: 404 });
    const t = await startTestServer({ allowPrivateUrls: true });
    try {
      const created = await t.request('POST', '/audio/splits', {
        body: { input: { type: 'direct_url', url: `http://127.0.0.1:${sinkPort}/music/remote.wav` }, stemModel: '4s' },
      });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.json.data.creditsUsed, 3);
      const done = await waitForSplit(t, created.json.data.id);
      assert.equal(done.json.data.status, 'succeeded');
      assert.equal(done.json.data.filename, 'remote.wav');
      const missing = await t.request('POST', '/audio/splits', { body: { input: { type: 'direct_url', url: `http://127.0.0.1:${sinkPort}/nope.wav` } } });
      assert.equal(missing.status, 422);
      assert.match(missing.json.error.message, /404/);
    } finally {
      await t.close();
    }
  });
});
