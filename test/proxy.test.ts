/**
 * Behind a reverse proxy that serves stemsplit under a path prefix (`--public-url`): every URL the
 * API hands out, and every address the page uses, must work through the proxy.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { webSessionLink } from '../src/net/page-links.js';
import { ApiClient } from './support/client.js';
import { writeSong } from './support/audio.js';
import { startTestServer, tempDir } from './support/server.js';

/** A loopback proxy that forwards `<prefix>/…` to `target` with the prefix stripped, as nginx's `proxy_pass …/;` does. */
async function startPrefixProxy(prefix: string) {
  const proxy = { target: '', port: 0, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  const server = http.createServer((req, res) => {
    if (!req.url?.startsWith(`${prefix}/`)) return void res.writeHead(404).end('not under the prefix');
    const target = new URL(req.url.slice(prefix.length), proxy.target);
    const upstream = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.once('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.port = (server.address() as AddressInfo).port;
  return proxy;
}

test('behind a proxy with a path prefix, upload, split, stems, the page and its assets all work through the public URL', async () => {
  const proxy = await startPrefixProxy('/stemsplit');
  const publicUrl = `http://127.0.0.1:${proxy.port}/stemsplit`;
  const t = await startTestServer({ publicUrl: `${publicUrl}/` });
  proxy.target = t.server.url;
  const client = new ApiClient(publicUrl, t.key);
  const api = (method: string, path: string, body?: unknown) => client.request(method, path, body === undefined ? {} : { body });
  try {
    const dir = tempDir();
    writeSong(join(dir, 'song.wav'), 1.5);
    const bytes = readFileSync(join(dir, 'song.wav'));
    const reservation = await client.reserveUpload(bytes.length);
    assert.ok(reservation.uploadUrl.startsWith(`${publicUrl}/v1/uploads/`), reservation.uploadUrl);
    const input = await client.sendUpload(reservation, bytes);
    assert.ok(input.fileUrl.startsWith(`${publicUrl}/v1/uploads/`), input.fileUrl);

    const created = await api('POST', '/audio/splits', { input, stemModel: '4s' });
    assert.equal(created.status, 200, JSON.stringify(created.json));
    const split = (await client.waitForSplit(created.json.data.id)).json.data;
    assert.equal(split.status, 'succeeded', JSON.stringify(split.error));
    for (const url of Object.values(split.stems as Record<string, string>)) {
      assert.ok(url.startsWith(`${publicUrl}/v1/files/`), url);
      const stem = await fetch(url);
      assert.equal(stem.status, 200);
      assert.ok((await stem.arrayBuffer()).byteLength > 1000);
    }

    const openapi = (await (await fetch(`${publicUrl}/v1/openapi.json`)).json()) as { servers: Array<{ url: string }> };
    assert.deepEqual(openapi.servers, [{ url: `${publicUrl}/v1` }], 'the API description names the public address');

    const link = webSessionLink(publicUrl, 'sk_x');
    assert.equal(link, `${publicUrl}/#key=sk_x`);
    const page = await fetch(link);
    assert.equal(page.status, 200);
    const html = await page.text();
    const assets = [...html.matchAll(/(?:href|src)="([^"#]+)"/g)].map((m) => m[1] as string);
    assert.ok(assets.length >= 3, html);
    for (const asset of assets) {
      const response = await fetch(new URL(asset, `${publicUrl}/`));
      assert.equal(response.status, 200, `${asset} through the proxy`);
    }
  } finally {
    await t.close();
    await proxy.close();
  }
});
