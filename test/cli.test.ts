/** The CLI as a user runs it: real processes, a real data dir, real audio files. */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { decodedSamples, writeSong } from './support/audio.js';
import { runCli, spawnCli } from './support/process.js';
import { tempDir } from './support/server.js';
import { until } from './support/wait.js';

test('keys create (once, JSON), list, revoke; the key never appears again', () => {
  const env = { STEMSPLIT_DATA_DIR: tempDir() };
  const created = runCli(['keys', 'create', '--name', 'laptop', '--json'], env);
  assert.equal(created.status, 0, created.stderr);
  const key = JSON.parse(created.stdout) as { id: string; key: string; account: string };
  assert.deepEqual(Object.keys(key), ['id', 'key', 'account']);
  assert.match(key.key, /^sk_stemsplit_[\w-]{43}$/);
  assert.equal(key.account, 'default');
  const listed = runCli(['keys', 'list'], env);
  assert.match(listed.stdout, new RegExp(key.id));
  assert.match(listed.stdout, /laptop/);
  assert.equal(listed.stdout.includes(key.key), false);
  assert.equal(runCli(['keys', 'revoke', key.id], env).status, 0);
  const active = runCli(['keys', 'list'], env);
  assert.equal(active.stdout, 'No active API keys. Create one with: stemsplit keys create\n', 'revoked keys are not listed by default');
  assert.equal(active.stderr, '(1 revoked key not shown; --all shows them)\n');
  assert.match(runCli(['keys', 'list', '--all'], env).stdout, new RegExp(`^${key.id} .*laptop .* revoked `, 'm'));
  assert.deepEqual(JSON.parse(runCli(['keys', 'list', '--json'], env).stdout), []);
  assert.equal(JSON.parse(runCli(['keys', 'list', '--all', '--json'], env).stdout)[0].id, key.id);
  const again = runCli(['keys', 'revoke', key.id], env);
  assert.notEqual(again.status, 0);
  assert.equal(again.stderr.trim().split('\n').length, 1, 'one-line error');
});

test('credits show and grant honour --data-dir and --account', () => {
  const dir = tempDir();
  assert.match(runCli(['--data-dir', dir, 'credits', 'show']).stdout, /default: 3600 credits/);
  assert.match(runCli(['--data-dir', dir, 'credits', 'grant', '600']).stdout, /balance 4200/);
  assert.match(runCli(['--data-dir', dir, 'credits', 'grant', '60', '--account', 'band']).stdout, /balance 60/);
  const shown = JSON.parse(runCli(['--data-dir', dir, 'credits', 'show', '--account', 'band', '--json']).stdout);
  assert.deepEqual(shown, { account: 'band', balance: 60, unit: 'seconds' });
  const bad = runCli(['--data-dir', dir, 'credits', 'grant', '-5']);
  assert.notEqual(bad.status, 0);
  assert.ok(existsSync(join(dir, 'stemsplit.sqlite')));

  const history = runCli(['--data-dir', dir, 'credits', 'history']).stdout.split('\n').filter(Boolean);
  assert.equal(history.length, 2, "newest first: the CLI grant, then the data dir's initial grant");
  assert.match(history[0] ?? '', /^\d{4}-\d\d-\d\dT\S+Z  grant +\+600  balance 4200 +granted with the CLI$/);
  assert.match(history[1] ?? '', /^\S+  grant +\+3600  balance 3600 +initial grant of a new data dir$/);
  const one = JSON.parse(runCli(['--data-dir', dir, 'credits', 'history', '--account', 'band', '--limit', '1', '--json']).stdout);
  assert.deepEqual(
    { ...one, entries: one.entries.map(({ createdAt, ...rest }: { createdAt: string }) => rest) },
    {
      account: 'band',
      unit: 'seconds',
      entries: [{ kind: 'grant', amount: 60, splitId: null, note: 'granted with the CLI', balanceAfter: 60 }],
    },
  );
  const badLimit = runCli(['--data-dir', dir, 'credits', 'history', '--limit', '0']);
  assert.equal(badLimit.status, 2);
  assert.equal(badLimit.stderr, 'stemsplit: --limit must be a whole number from 1 to 10000, got "0"\n');
});

test('webhook-secret rotate prints a new secret once', () => {
  const env = { STEMSPLIT_DATA_DIR: tempDir() };
  const first = runCli(['webhook-secret', 'rotate'], env);
  const second = runCli(['webhook-secret', 'rotate'], env);
  assert.match(first.stdout.trim(), /^whsec_[\w-]{43}$/);
  assert.notEqual(first.stdout, second.stdout);
});

test('split writes DIR/<track>/<stem>.<ext> for wav, 32-bit float wav and mp3, each as long as the source', () => {
  const dir = tempDir();
  const env = { STEMSPLIT_DATA_DIR: join(dir, 'data') };
  writeSong(join(dir, 'tune.flac'), 3.1);
  const out = join(dir, 'out');
  const wav = runCli(['split', join(dir, 'tune.flac'), '-o', out, '--format', 'wav', '--float32', '--json'], env);
  assert.equal(wav.status, 0, wav.stderr);
  const result = JSON.parse(wav.stdout) as { stems: Record<string, string>; model: string };
  assert.deepEqual(Object.keys(result.stems).sort(), ['bass', 'drums', 'other', 'vocals']);
  const vocals = readFileSync(join(out, 'tune', 'vocals.wav'));
  assert.equal(vocals.readUInt16LE(20), 3, 'WAVE_FORMAT_IEEE_FLOAT');
  assert.equal(vocals.readUInt16LE(34), 32);
  assert.equal(decodedSamples(join(out, 'tune', 'vocals.wav')), Math.round(3.1 * 44100));
  assert.match(wav.stderr, /100%/, 'progress is shown on stderr');
  assert.match(
    wav.stderr,
    /^\(the small bundled model; for Demucs v4 quality run "stemsplit models pull htdemucs" once; its weights are for research use only\)$/m,
  );

  // Another model into the same -o: its stems go to a folder of their own in the song's (docs/workflows.md, "Stem sets and folders").
  const mp3 = runCli(['split', join(dir, 'tune.flac'), '-o', out, '--model', '6s', '--mp3-bitrate', '128'], env);
  assert.equal(mp3.status, 0, mp3.stderr);
  assert.match(mp3.stderr, /"stemsplit models pull htdemucs_6s"/);
  for (const stem of ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano']) {
    assert.equal(decodedSamples(join(out, 'tune', 'stemsplit-small-6s', `${stem}.mp3`)), Math.round(3.1 * 44100), stem);
  }
  assert.ok(existsSync(join(out, 'tune', 'vocals.wav')), "the first model's stems are left alone");
});

test('bad input gives a one-line error and a non-zero exit', () => {
  const dir = tempDir();
  const env = { STEMSPLIT_DATA_DIR: join(dir, 'data') };
  writeFileSync(join(dir, 'notes.txt'), 'not audio');
  const cases: string[][] = [
    ['split', join(dir, 'missing.wav')],
    ['split', dir],
    ['split', join(dir, 'notes.txt')],
    ['split', join(dir, 'notes.txt'), '--format', 'wma'],
    ['split', join(dir, 'notes.txt'), '--model', 'no-such-model'],
    ['split', join(dir, 'notes.txt'), '--model', 'htdemucs'],
    ['serve', '--port', 'eighty'],
    ['frobnicate'],
  ];
  for (const args of cases) {
    const result = runCli(args, env);
    assert.notEqual(result.status, 0, args.join(' '));
    const errors = result.stderr.split('\n').filter((l) => /^(stemsplit|error):/.test(l));
    assert.equal(errors.length, 1, `${args.join(' ')}: ${result.stderr}`);
    assert.doesNotMatch(result.stderr, /\n\s+at /, 'no stack trace');
  }
  assert.match(runCli(['split', join(dir, 'notes.txt'), '--model', 'htdemucs'], env).stderr, /models pull htdemucs/);
  const folder = runCli(['split', dir], env);
  assert.match(
    folder.stderr,
    new RegExp(`^stemsplit: ${dir} holds no audio files \\(mp3, wav, flac, m4a, ogg, opus, aiff, …, \\d+ other files? skipped\\)$`, 'm'),
  );
  assert.equal(runCli(['split', join(dir, 'missing.wav')], env).status, 6, 'a missing file is "no such file", exit 6');
});

test('serve on a taken port or a foreign address says so in one line, and the data dir stays usable', async () => {
  const env = { STEMSPLIT_DATA_DIR: join(tempDir(), 'data') };
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  try {
    const { port } = holder.address() as AddressInfo;
    const taken = runCli(['serve', '--host', '127.0.0.1', '--port', String(port)], env);
    assert.equal(taken.status, 15, taken.stderr);
    assert.equal(taken.stderr, `stemsplit: 127.0.0.1:${port} is already in use; choose another with --port\n`);
  } finally {
    holder.close();
  }
  // 192.0.2.1 is TEST-NET-1: never an address of this machine, and binding sends nothing.
  const foreign = runCli(['serve', '--host', '192.0.2.1', '--port', '0'], env);
  assert.equal(foreign.status, 15, foreign.stderr);
  assert.equal(foreign.stderr, 'stemsplit: 192.0.2.1 is not an address of this machine; check --host\n');
  assert.equal(runCli(['credits', 'show'], env).status, 0, 'the failed starts left the data dir usable');
});

test('serve takes its settings from STEMSPLIT_* variables and refuses a bad one in one line', async () => {
  const env = { STEMSPLIT_DATA_DIR: join(tempDir(), 'data') };
  for (const [name, value, message] of [
    ['STEMSPLIT_PORT', 'eighty', '--port must be a whole number from 0 to 65535, got "eighty"'],
    ['STEMSPLIT_PUBLIC_URL', 'ftp://studio.example', '--public-url must be http or https, got "ftp://studio.example"'],
    ['STEMSPLIT_PUBLIC_URL', 'https://studio.example/?a=1', '--public-url takes no credentials, query or fragment, got "https://studio.example/?a=1"'],
  ] as const) {
    const refused = runCli(['serve'], { ...env, [name]: value });
    assert.equal(refused.status, 2, refused.stderr);
    assert.equal(refused.stderr, `stemsplit: ${message}\n`);
  }

  const free = createServer();
  await new Promise<void>((resolve) => free.listen(0, '127.0.0.1', resolve));
  const { port } = free.address() as AddressInfo;
  await new Promise<void>((resolve) => free.close(() => resolve()));
  const child = spawnCli(['serve'], {
    ...env,
    STEMSPLIT_HOST: '127.0.0.1',
    STEMSPLIT_PORT: String(port),
    STEMSPLIT_PUBLIC_URL: 'https://studio.example/stemsplit/',
  });
  let stdout = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  try {
    await until(
      () => stdout.includes('Open '),
      30_000,
      () => `serve printed no link: ${stdout}`,
    );
  } finally {
    child.kill('SIGKILL');
  }
  assert.match(stdout, new RegExp(`^stemsplit listening on http://127\\.0\\.0\\.1:${port}/v1 `, 'm'));
  assert.match(stdout, /^clients reach it at https:\/\/studio\.example\/stemsplit\/v1 \(--public-url\)$/m);
  assert.match(stdout, /^Open https:\/\/studio\.example\/stemsplit\/#invite=inv_/m);
});

test('Ctrl-C while the stems are being encoded stops with exit 130 and leaves no half-written stems', async () => {
  const dir = tempDir();
  writeSong(join(dir, 'long.wav'), 90);
  const out = join(dir, 'out');
  const child = spawnCli(['split', join(dir, 'long.wav'), '-o', out, '--model', 'bundled-4s'], { STEMSPLIT_DATA_DIR: join(dir, 'data') });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('close', resolve));
  const staging = () => (existsSync(out) ? readdirSync(out).filter((name) => name.startsWith('long.partial-')) : []);
  await until(
    () => staging().length > 0,
    60_000,
    () => `the encode phase never began: ${stderr}`,
  );
  assert.equal(staging().length, 1, `the encode phase began: ${stderr}`);
  child.kill('SIGINT');
  assert.equal(await exited, 130, stderr);
  assert.match(stderr, /\nstemsplit: stopped by SIGINT; nothing was written for long\n$/);
  assert.deepEqual(readdirSync(out), [], 'neither stems nor their staging folder remain');
});

test('models list shows the bundled models and the Demucs models to pull', () => {
  const listed = runCli(['models', 'list', '--json'], { STEMSPLIT_DATA_DIR: tempDir() });
  assert.equal(listed.status, 0);
  const rows = JSON.parse(listed.stdout) as Array<{ name: string; installed: boolean; aliases: string[] }>;
  assert.ok(rows.some((r) => r.name === 'htdemucs' && !r.installed));
  assert.ok(rows.some((r) => r.installed && r.aliases.includes('4s')));
  assert.ok(rows.some((r) => r.installed && r.aliases.includes('6s')));
});

test('--version prints the version', () => {
  const result = runCli(['--version']);
  assert.equal(result.status, 0);
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(result.stdout.trim(), pkg.version);
});
