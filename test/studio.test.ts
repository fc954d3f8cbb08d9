/**
 * A studio's first hour: uploads as large as the operator allows (`serve --max-upload-mb`, the
 * spec's 50 MiB by default) through the reservation, the upload, `direct_url`, the OpenAPI
 * document and `GET /v1/limits`; disk room still checked; the page's link printed for each LAN
 * address of a wildcard host, or the public URL, and printed again without ending the first.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, statfsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { NetworkInterfaceInfo } from 'node:os';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { writeSong } from './support/audio.js';
import { killHard, runCli } from './support/process.js';
import { startTestServer, tempDir, type TestServer } from './support/server.js';
import { resolveConfig } from '../src/config.js';
import { exitCodeMarkdown, exitCodes } from '../src/errors.js';
import { MODEL_CATALOG } from '../src/models/catalog.js';
import { MODEL_FAMILIES } from '../src/models/families.js';
import { MAX_UPLOAD_BYTES } from '../src/limits.js';
import { pageOrigins, webSessionLink } from '../src/net/page-links.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MIB = 1024 * 1024;

/** A WAV song of `seconds`, as bytes. */
function songBytes(seconds: number): Buffer {
  const path = join(tempDir(), 'song.wav');
  writeSong(path, seconds);
  return readFileSync(path);
}

const reserve = (t: TestServer, contentLength: number) =>
  t.request('POST', '/audio/uploads', { body: { filename: 'bounce.wav', contentType: 'audio/wav', contentLength } });

describe('the upload limit', () => {
  let spec: TestServer;
  let small: TestServer;
  before(async () => {
    spec = await startTestServer();
    small = await startTestServer({ maxUploadMb: 1, allowPrivateUrls: true });
  });
  after(async () => {
    await spec.close();
    await small.close();
  });

  test("is the spec's 52,428,800 bytes by default: a bigger reservation is refused, the documents say so", async () => {
    assert.equal(MAX_UPLOAD_BYTES, 52_428_800);
    assert.equal(resolveConfig({}, {}).maxUploadBytes, 52_428_800);
    const refused = await reserve(spec, 52_428_801);
    assert.equal(refused.status, 422);
    assert.equal(refused.json.error.message, 'contentLength must be an integer at most 52428800');
    assert.equal((await reserve(spec, 52_428_800)).status, 200);
    assert.equal((await spec.request('GET', '/limits', { key: null })).json.data.maxUploadBytes, 52_428_800);
    const openapi = (await spec.request('GET', '/openapi.json')).json;
    assert.equal(openapi.components.schemas.UploadRequest.properties.contentLength.maximum, 52_428_800);
  });

  test('a server configured above it takes a file over 50 MB in full', async () => {
    const studio = await startTestServer({ maxUploadMb: 64 });
    try {
      const bounce = Buffer.alloc(58.6 * 1e6, 1); // the long.wav: 58.6 MB
      const reserved = await reserve(studio, bounce.length);
      assert.equal(reserved.status, 200, reserved.text);
      const { uploadUrl, uploadHeaders } = reserved.json.data;
      const sent = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: bounce });
      assert.equal(sent.status, 200, await sent.clone().text());
      assert.match(((await sent.json()) as { data: { key: string } }).data.key, /^uploads\/upl_/);
      assert.equal((await reserve(studio, 64 * MIB + 1)).status, 422);
    } finally {
      await studio.close();
    }
  });

  test('a server configured below it refuses what is over its own limit everywhere, and says so', async () => {
    const limits = (await small.request('GET', '/limits', { key: null })).json.data;
    assert.deepEqual(limits, {
      maxUploadBytes: MIB,
      maxSourceSeconds: null,
      uploadTtlSeconds: 3600,
      stemUrlTtlSeconds: 86_400,
      stemRetentionSeconds: 604_800,
      contentTypes: ['audio/mpeg', 'audio/wav', 'audio/flac', 'audio/mp4', 'audio/x-m4a', 'audio/x-wav', 'audio/webm'],
    });
    assert.equal((await small.request('GET', '/openapi.json')).json.components.schemas.UploadRequest.properties.contentLength.maximum, MIB);
    const refused = await reserve(small, MIB + 1);
    assert.equal(refused.json.error.message, `contentLength must be an integer at most ${MIB}`);

    // direct_url: a loopback file over the limit is refused; one under it is split.
    const big = songBytes(8); // 8 s of 16-bit stereo 44.1 kHz WAV: about 1.4 MB
    const fits = songBytes(2);
    assert.ok(big.length > MIB && fits.length < MIB);
    const files = createServer((req, res) => res.end(req.url === '/big.wav' ? big : fits));
    await new Promise<void>((resolve) => files.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(files.address() as AddressInfo).port}`;
    try {
      const tooBig = await small.request('POST', '/audio/splits', { body: { input: { type: 'direct_url', url: `${origin}/big.wav` }, stemModel: '4s' } });
      assert.equal(tooBig.status, 422, tooBig.text);
      assert.match(tooBig.json.error.message, /larger than 1048576 bytes/);
      const ok = await small.request('POST', '/audio/splits', { body: { input: { type: 'direct_url', url: `${origin}/fits.wav` }, stemModel: '4s' } });
      assert.equal(ok.status, 200, ok.text);
    } finally {
      files.close();
    }
  });

  test('a file the disk cannot hold is refused at reservation (507), whatever the limit allows', async () => {
    const roomy = await startTestServer({ maxUploadMb: 1024 * 1024 });
    try {
      const stats = statfsSync(roomy.dataDir);
      const free = stats.bavail * stats.bsize;
      const tooBig = free + 1024 * MIB;
      if (tooBig > 1024 * 1024 * MIB) return; // a disk with over 1 TiB free: nothing to refuse
      const refused = await reserve(roomy, tooBig);
      assert.equal(refused.status, 507, refused.text);
      assert.match(refused.json.error.message, /^the server has no room for this file: it is [\d.]+ GB and \S+ has [\d.]+ GB free$/);
    } finally {
      await roomy.close();
    }
  });

  test('serve --max-upload-mb and STEMSPLIT_MAX_UPLOAD_MB set it; a bad value is one line and exit 2', () => {
    assert.equal(resolveConfig({}, { STEMSPLIT_MAX_UPLOAD_MB: '200' }).maxUploadBytes, 200 * MIB);
    assert.equal(resolveConfig({ maxUploadMb: 3 }, { STEMSPLIT_MAX_UPLOAD_MB: '200' }).maxUploadBytes, 3 * MIB);
    const bad = runCli(['--data-dir', tempDir(), 'serve', '--max-upload-mb', '0']);
    assert.equal(bad.status, 2);
    assert.equal(bad.stderr.trim(), 'stemsplit: --max-upload-mb must be a whole number from 1 to 1048576, got "0"');
  });
});

const v4 = (address: string, internal = false): NetworkInterfaceInfo => ({
  address,
  family: 'IPv4',
  internal,
  netmask: '255.255.255.0',
  mac: '00:00:00:00:00:00',
  cidr: null,
});
const v6 = (address: string, internal = false): NetworkInterfaceInfo => ({
  address,
  family: 'IPv6',
  internal,
  netmask: 'ffff:ffff:ffff:ffff::',
  mac: '00:00:00:00:00:00',
  cidr: null,
  scopeid: 0,
});

describe('the page link', () => {
  const box = {
    lo: [v4('127.0.0.1', true), v6('::1', true)],
    eth0: [v4('192.168.1.20'), v6('fe80::1'), v6('2001:db8::20')],
    wlan0: [v4('10.0.0.7')],
  };

  test('on a wildcard host: one per non-loopback address of the box (IPv6 ones only on ::, never link-local)', () => {
    assert.deepEqual(pageOrigins({ host: '0.0.0.0', port: 8787 }, box), ['http://192.168.1.20:8787', 'http://10.0.0.7:8787']);
    assert.deepEqual(pageOrigins({ host: '::', port: 8787 }, box), ['http://192.168.1.20:8787', 'http://10.0.0.7:8787', 'http://[2001:db8::20]:8787']);
    assert.deepEqual(pageOrigins({ host: '0.0.0.0', port: 8787 }, { lo: box.lo }), ['http://127.0.0.1:8787'], 'loopback when the box has nothing else');
    assert.equal(webSessionLink('http://192.168.1.20:8787', 'sk_stemsplit_abc'), 'http://192.168.1.20:8787/#key=sk_stemsplit_abc');
  });

  test('with --public-url: the public URL alone; on one host: that host', () => {
    assert.deepEqual(pageOrigins({ host: '0.0.0.0', port: 8787, publicUrl: 'https://studio.example/stemsplit' }, box), ['https://studio.example/stemsplit']);
    assert.equal(webSessionLink('https://studio.example/stemsplit', 'k'), 'https://studio.example/stemsplit/#key=k');
    assert.deepEqual(pageOrigins({ host: '127.0.0.1', port: 9000 }, box), ['http://127.0.0.1:9000']);
    assert.deepEqual(pageOrigins({ host: '::1', port: 9000 }, box), ['http://[::1]:9000']);
  });

  test('serve prints a working invite link; keys link prints a key link ending the key it replaces (--keep: not), serve --print-link a new invite', {
    timeout: 120_000,
  }, async () => {
    const dataDir = tempDir();
    const serveOnce = async (args: string[]): Promise<{ lines: string[]; origin: string; stop: () => Promise<void> }> => {
      const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/run.ts', '--data-dir', dataDir, 'serve', '--port', '0', ...args], {
        cwd: ROOT,
        stdio: ['ignore', 'pipe', 'ignore'],
      });
      const out = await new Promise<string>((resolve, reject) => {
        let text = '';
        child.stdout.on('data', (chunk: Buffer) => {
          text += chunk.toString();
          if (/^(Open|The web page is at) .*\n/m.test(text)) resolve(text);
        });
        child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${text}`)));
      });
      const origin = /listening on (http:\/\/\S+)\/v1/.exec(out)?.[1] ?? '';
      return { lines: out.trim().split('\n'), origin, stop: () => killHard(child) };
    };
    const keyOf = (link: string) => decodeURIComponent(new URL(link).hash.slice('#key='.length));
    /** The key the page gets for serve's one-time invite. */
    const exchanged = async (link: string) => {
      const response = await fetch(`${new URL(link).origin}/v1/invites/exchange`, {
        method: 'POST',
        body: JSON.stringify({ invite: decodeURIComponent(new URL(link).hash.slice('#invite='.length)) }),
        headers: { 'content-type': 'application/json' },
      });
      return ((await response.json()) as { data: { key: string } }).data.key;
    };
    // Retried once: a kept-alive socket the server closes as it idles (5 s, while keys link runs) fails a fetch.
    const credits = (origin: string, key: string) => fetch(`${origin}/v1/credits`, { headers: { authorization: `Bearer ${key}` } });
    const works = async (origin: string, key: string) => (await credits(origin, key).catch(() => credits(origin, key))).status === 200;

    const first = await serveOnce([]);
    try {
      const opened = first.lines.filter((line) => line.startsWith('Open '));
      assert.equal(opened.length, 1, first.lines.join('\n'));
      const link = /^Open (\S+) to split songs in the browser$/.exec(opened[0] ?? '')?.[1] ?? '';
      assert.equal(new URL(link).origin, first.origin, 'on loopback, the link is the loopback address');
      assert.equal((await fetch(link)).status, 200);
      const firstKey = await exchanged(link);
      assert.ok(await works(first.origin, firstKey));

      // Beside the running serve, from another shell: a new key, which replaces the first link's.
      const again = runCli(['--data-dir', dataDir, 'keys', 'link']);
      assert.equal(again.status, 0, again.stderr);
      const relinked = again.stdout.trim();
      assert.equal(new URL(relinked).origin, first.origin, 'at the address serve recorded');
      assert.notEqual(keyOf(relinked), firstKey);
      assert.ok(await works(first.origin, keyOf(relinked)));
      assert.equal(await works(first.origin, firstKey), false, 'the web-session key it replaces no longer works');
      assert.match(again.stderr, /the link it replaces no longer works \(key_\w+ revoked; --keep keeps earlier links\)/);
      // --keep: one more key, the earlier link still working.
      const kept = runCli(['--data-dir', dataDir, 'keys', 'link', '--keep']);
      assert.equal(kept.status, 0, kept.stderr);
      assert.ok(await works(first.origin, keyOf(kept.stdout.trim())));
      assert.ok(await works(first.origin, keyOf(relinked)), 'with --keep the earlier link keeps working');
      assert.match(kept.stderr, /earlier links keep working/);
    } finally {
      await first.stop();
    }
    const later = await serveOnce([]);
    await later.stop();
    assert.match(
      later.lines.find((line) => line.startsWith('The web page is at')) ?? '',
      /^The web page is at http:\/\/127\.0\.0\.1:\d+\/: browsers that opened its invite keep their key \("stemsplit serve --print-link" prints a new invite\)$/,
    );
    const printed = await serveOnce(['--print-link']);
    await printed.stop();
    assert.equal(printed.lines.filter((line) => /^Open http:\/\/127\.0\.0\.1:\d+\/#invite=inv_stemsplit_/.test(line)).length, 1, printed.lines.join('\n'));
  });
});

describe('docs and help', () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');

  test("README's exit-code table and --help's list are src/errors.ts's", () => {
    assert.ok(readme.includes(exitCodeMarkdown()), 'README holds the table scripts/exit-codes.ts prints');
    const help = runCli(['--help']);
    assert.equal(help.status, 0);
    for (const { exitCode, meaning } of exitCodes())
      assert.match(help.stdout, new RegExp(`^ +${exitCode}  ${meaning.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`, 'm'));
  });

  test('models pull, list and remove speak of every family they handle', () => {
    for (const command of ['pull', 'remove']) {
      const help = runCli(['models', command, '--help']).stdout.replace(/\s+/g, ' ');
      for (const model of MODEL_CATALOG) assert.ok(help.includes(model.name), `${command} --help names ${model.name}`);
    }
    // `models list` names every family it lists, as the one list (models/families.ts) words them.
    const modelsHelp = runCli(['models', '--help']).stdout.replace(/\s+/g, ' ');
    for (const family of MODEL_FAMILIES) assert.ok(modelsHelp.includes(family.takers), `models --help names ${family.takers}`);
    assert.match(modelsHelp, /list .*scnet, mdx23c: MSST checkpoints/);
    assert.match(runCli(['credits', '--help']).stdout, /^ {2}show \[options\] +\S/m, 'credits show has a description');
  });

  test("README's commands run the stemsplit on the PATH, never npx (which works only inside the clone)", () => {
    const commands = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((m) => (m[1] as string).split('\n'));
    assert.deepEqual(
      commands.filter((line) => /\bnpx stemsplit\b/.test(line)),
      [],
    );
    assert.match(readme, /npm link {2,}# puts `stemsplit` on the PATH/);
    assert.match(readme, /npm_config_nodedir=\/usr npm install/, 'the offline install that works on npm 10 and 11');
    assert.deepEqual(
      commands.filter((line) => /npm config set nodedir/.test(line)),
      [],
      'npm 11 refuses it',
    );
  });
});
