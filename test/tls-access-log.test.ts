/**
 * A studio's LAN (issue 48): `serve --tls-cert FILE --tls-key FILE` serves HTTPS (a self-signed
 * certificate made here with openssl, trusted by the test's own client) and its links say https;
 * the access log has one line per request (time, account, method, path, status, milliseconds) and
 * never a key, a query string or a signature, on stdout or in `--access-log FILE`. Loopback only.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { before, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { startTestServer, tempDir } from './support/server.js';
import { until } from './support/wait.js';

let cert: string;
let key: string;

before(() => {
  const dir = tempDir();
  cert = join(dir, 'cert.pem');
  key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      key,
      '-out',
      cert,
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
    ],
    { stdio: 'ignore' },
  );
});

/** GET over HTTPS, trusting only the test's certificate. */
function httpsGet(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(url, { ca: readFileSync(cert), headers }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const LINE = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (\S+) (GET|POST|PUT|DELETE) (\/\S*) (\d{3}) (\d+)ms$/;

/** Every line is one request in the documented form, and holds nothing secret. */
function assertClean(lines: readonly string[], secrets: readonly string[]): void {
  for (const line of lines) {
    assert.match(line, LINE);
    assert.equal(line.includes('?'), false, `no query string: ${line}`);
    assert.equal(/sk_stemsplit_|[0-9a-f]{64}/.test(line), false, `no key or signature: ${line}`);
    for (const secret of secrets) assert.equal(line.includes(secret), false, `no secret: ${line}`);
  }
}

test('HTTPS with a self-signed certificate: the API and the page answer over TLS, each request one access-log line', async () => {
  const lines: string[] = [];
  const t = await startTestServer({ tlsCert: cert, tlsKey: key }, { accessLog: (line) => lines.push(line) });
  try {
    assert.match(t.server.url, /^https:\/\/127\.0\.0\.1:\d+$/);
    assert.equal((await httpsGet(`${t.server.url}/v1/health`)).status, 200);
    const credits = await httpsGet(`${t.server.url}/v1/credits`, { authorization: `Bearer ${t.key}` });
    assert.equal(credits.status, 200, credits.body);
    assert.equal((await httpsGet(`${t.server.url}/`)).status, 200);
    assert.equal((await httpsGet(`${t.server.url}/v1/credits`, { authorization: 'Bearer sk_stemsplit_wrong' })).status, 401);
    await assert.rejects(fetch(t.server.url.replace('https:', 'http:') + '/v1/health'), 'plain HTTP gets no answer from a TLS port');
    await until(() => lines.length >= 4);
    assert.equal(lines.length, 4, lines.join('\n'));
    assertClean(lines, [t.key]);
    const parsed = lines.map((line) => LINE.exec(line)?.slice(2, 6).join(' '));
    assert.deepEqual(parsed, ['- GET /v1/health 200', 'default GET /v1/credits 200', '- GET / 200', '- GET /v1/credits 401']);
  } finally {
    await t.close();
  }
});

test('the access log: the account of each key, and a stem download logged without its signature or key id', { timeout: 120_000 }, async () => {
  const lines: string[] = [];
  const t = await startTestServer({}, { accessLog: (line) => lines.push(line) });
  try {
    const dir = tempDir();
    writeSong(join(dir, 'song.wav'), 2);
    const input = await t.client.upload(readFileSync(join(dir, 'song.wav')));
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    const done = await t.client.waitForSplit(created.json.data.id);
    const stem = done.json.data.stems.vocals as string;
    assert.equal((await fetch(stem)).status, 200);
    await until(() => lines.some((line) => line.includes('/vocals.mp3')));
    assertClean(lines, [t.key, new URL(stem).searchParams.get('signature') as string]);
    const download = lines.find((line) => line.includes('/vocals.mp3')) as string;
    assert.match(download, new RegExp(` default GET /v1/files/${created.json.data.id}/vocals\\.mp3 200 \\d+ms$`));
    assert.ok(
      lines.some((line) => / default POST \/v1\/uploads\/upl_\w+ 200 /.test(line) || / - (PUT|POST) \/v1\/uploads\/upl_\w+ 200 /.test(line)),
      lines.join('\n'),
    );
    assert.ok(lines.some((line) => / default POST \/v1\/audio\/splits 200 /.test(line)));
  } finally {
    await t.close();
  }
});

test('stemsplit serve --tls-cert --tls-key --access-log FILE: the printed links say https, the log file is 0600 and holds no key', {
  timeout: 90_000,
}, async () => {
  const dir = tempDir();
  const accessLog = join(dir, 'access.log');
  const dataDir = join(dir, 'data');
  const { child, url } = await startServeProcess(['--data-dir', dataDir, '--tls-cert', cert, '--tls-key', key, '--access-log', accessLog]);
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  try {
    assert.match(url, /^https:\/\//);
    assert.equal((await httpsGet(`${url}/v1/health`)).status, 200);
    assert.equal((await httpsGet(`${url}/`)).status, 200);
    await until(() => readFileSync(accessLog, 'utf8').split('\n').filter(Boolean).length >= 2);
    const lines = readFileSync(accessLog, 'utf8').split('\n').filter(Boolean);
    assertClean(lines, []);
    assert.equal(statSync(accessLog).mode & 0o777, 0o600);
    assert.equal(/^\d{4}-.* GET /m.test(stdout), false, 'with --access-log, stdout has no access lines');
  } finally {
    await killHard(child);
  }
  // The links serve printed are the ones it recorded for `keys link`: https.
  const links = runCli(['--data-dir', dataDir, 'keys', 'link', '--json']);
  assert.equal(links.status, 0, links.stderr);
  const printed = JSON.parse(links.stdout).links as string[];
  assert.ok(printed.length > 0 && printed.every((link) => link.startsWith('https://127.0.0.1:')), printed.join(' '));
  const half = runCli(['--data-dir', dataDir, 'serve', '--port', '0', '--tls-cert', cert]);
  assert.equal(half.status, 2, half.stderr);
  assert.match(half.stderr, /--tls-cert .* and --tls-key .* go together/);
});
