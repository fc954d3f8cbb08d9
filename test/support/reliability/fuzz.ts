/**
 * Property-based fuzzing of every endpoint of a running `stemsplit serve` (a child process, so a
 * crash shows as an exit). Properties: no 5xx, every error is the v1 envelope, each request's own
 * oracle holds (forged tokens and stem URLs never succeed, refused sources never make a job), the
 * server never dies; afterwards no file was written outside the data dir (checked with strace
 * when it is available, and by name and layout always), every accepted upload has exactly its
 * reserved length, and the ledger balances.
 *
 *   node --import tsx scripts/reliability/fuzz.ts [--requests 10000] [--seed N] [--no-strace] [--json]
 *   node --import tsx scripts/reliability/fuzz.ts --quick          # 1,500 requests
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { tempDir } from '../temp-dir.js';
import {
  anything,
  createSplit,
  downloadStem,
  getCredits,
  getSplit,
  listSplits,
  reserveUpload,
  transferBytes,
  type FuzzRequest,
  type FuzzTarget,
} from './fuzz-inputs.js';
import {
  api,
  auditLedger,
  cliJson,
  listFiles,
  parseJsonOr,
  queryDb,
  runCli,
  ServeProcess,
  sleep,
  table,
  tidyUp,
  upload,
  writeSong,
  type LedgerAudit,
} from './common.js';
import { rawRequest } from './raw-http.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

export interface FuzzOptions {
  readonly requests: number;
  readonly seed: number;
  /** Trace the server's file system calls with strace (when installed). */
  readonly strace: boolean;
  readonly log?: (line: string) => void;
}

export interface FuzzReport {
  readonly requests: number;
  readonly byEndpoint: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Requests standing for an attack, by attack: how many were sent and how many succeeded (200 or 206). */
  readonly threats: Readonly<Record<string, { sent: number; accepted: number }>>;
  readonly serverErrors: number;
  readonly noAnswer: number;
  readonly jobsCreated: number;
  readonly straced: boolean;
  readonly writesTraced: number;
  readonly writesOutsideDataDir: readonly string[];
  readonly connectionsTraced: number;
  readonly connectionsOffLoopback: readonly string[];
  readonly ledger: LedgerAudit;
  readonly seconds: number;
  readonly problems: string[];
}

const API_CODES = new Set(['UNAUTHORIZED', 'INSUFFICIENT_CREDITS', 'VALIDATION_ERROR', 'RATE_LIMITED', 'NOT_FOUND', 'SERVER_ERROR']);

const ENVELOPED_METHODS = new Set(['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']);

/** The share of requests each endpoint gets. */
const MIX: ReadonlyArray<readonly [(t: FuzzTarget) => fc.Arbitrary<FuzzRequest>, number]> = [
  [reserveUpload, 0.14],
  [transferBytes, 0.16],
  [createSplit, 0.22],
  [getSplit, 0.08],
  [listSplits, 0.06],
  [getCredits, 0.04],
  [downloadStem, 0.16],
  [anything, 0.14],
];

export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => undefined);
  const started = Date.now();
  const workRoot = tempDir('stemsplit-fuzz-');
  const dataDir = join(workRoot, 'data');
  const songsDir = join(workRoot, 'songs');
  mkdirSync(songsDir);
  const server = new ServeProcess(dataDir, ['--rate-limit', '1000000']);
  const target = await prepare(server, songsDir);
  const tracer = options.strace ? startStrace(server, workRoot) : undefined;
  await tracer?.attached();
  log(`fuzzing ${server.url} (${tracer ? 'under strace' : 'without strace'})`);

  const problems: string[] = [];
  const byEndpoint: Record<string, Record<string, number>> = {};
  const threats: Record<string, { sent: number; accepted: number }> = {};
  let sent = 0;
  let serverErrors = 0;
  let noAnswer = 0;
  let jobsCreated = 0;

  const check = async (request: FuzzRequest): Promise<void> => {
    const answer = await send(server, request);
    sent++;
    const counts = (byEndpoint[request.label] ??= {});
    const bucket = answer.status === undefined ? 'no answer' : String(answer.status);
    counts[bucket] = (counts[bucket] ?? 0) + 1;
    if (answer.status === undefined) noAnswer++;
    if (request.threat) {
      const tally = (threats[request.threat] ??= { sent: 0, accepted: 0 });
      tally.sent++;
      if (answer.status === 200 || answer.status === 206) tally.accepted++;
    }
    if (request.transport === 'fetch' && request.label === 'POST /v1/audio/splits' && answer.status === 200) jobsCreated++;
    const complaint = judge(request, answer);
    if (answer.status !== undefined && answer.status >= 500) serverErrors++;
    if (!server.running) throw new Error(`the server died (${JSON.stringify(server.exit)}) on ${describe(request)}`);
    if (complaint) throw new Error(`${complaint} — ${describe(request)}`);
  };

  await Promise.all(
    MIX.map(async ([arbitrary, share], index) => {
      const details = await fc.check(fc.asyncProperty(arbitrary(target), check), {
        numRuns: Math.max(1, Math.round(options.requests * share)),
        seed: options.seed + index,
        endOnFailure: true,
      });
      if (details.failed)
        problems.push(
          `${details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)} (seed ${options.seed + index})`,
        );
    }),
  );
  log(`${sent} requests sent`);

  // Afterwards: alive, silent, nothing outside the data dir, no partial upload accepted, books balanced.
  // Alive: /health answers within 5 s (a poll, not a fixed pause: the server may still be finishing the last requests).
  let health = await api(server.url, null, 'GET', '/health').catch(() => undefined);
  for (const deadline = Date.now() + 5_000; health?.status !== 200 && Date.now() < deadline; ) {
    await sleep(100);
    health = await api(server.url, null, 'GET', '/health').catch(() => undefined);
  }
  if (health?.status !== 200) problems.push('the server does not answer /v1/health within 5 s of the fuzzing');
  if (server.errorLines().length > 0) problems.push(`the server logged errors:\n${server.errorLines().slice(0, 3).join('\n')}`);
  // Let jobs the fuzzing created finish first: a running job's stem staging folder is not a leftover.
  const jobIds = queryDb<{ id: string }>(dataDir, 'SELECT id FROM splits').map((r) => r.id);
  await server.client(target.key).waitForSplits(jobIds, 120_000);
  problems.push(...checkUploads(dataDir));
  problems.push(...checkLayout(workRoot, dataDir));
  problems.push(...findEscapes(target.nonce, workRoot));
  const ledger = auditLedger(dataDir);
  problems.push(...ledger.problems);
  await server.kill();
  const traced = tracer ? await tracer.finish() : { writes: [] as string[], remotes: [] as string[] };
  const outside = traced.writes.filter((path) => !path.startsWith(`${dataDir}/`) && !allowedOutside(path));
  if (outside.length > 0) problems.push(`writes outside the data dir: ${[...new Set(outside)].slice(0, 10).join(', ')}`);
  const offLoopback = traced.remotes.filter((address) => !/^(127\.|::1$|::ffff:127\.)/.test(address));
  if (offLoopback.length > 0) problems.push(`connections off loopback: ${[...new Set(offLoopback)].join(', ')}`);
  tidyUp(workRoot, problems);

  return {
    requests: sent,
    byEndpoint,
    threats,
    serverErrors,
    noAnswer,
    jobsCreated,
    straced: tracer !== undefined,
    writesTraced: traced.writes.length,
    writesOutsideDataDir: [...new Set(outside)],
    connectionsTraced: traced.remotes.length,
    connectionsOffLoopback: [...new Set(offLoopback)],
    ledger,
    seconds: (Date.now() - started) / 1000,
    problems,
  };
}

// ---------------------------------------------------------------------------------------------
// The target: a server with keys, reservations, uploads and a finished job to aim at

async function prepare(server: ServeProcess, songsDir: string): Promise<FuzzTarget> {
  const dataDir = server.dataDir;
  const { key } = cliJson<{ key: string }>(dataDir, ['keys', 'create']);
  const revoked = cliJson<{ id: string; key: string }>(dataDir, ['keys', 'create', '--name', 'revoked']);
  const revoke = runCli(['keys', 'revoke', revoked.id], { STEMSPLIT_DATA_DIR: dataDir });
  if (revoke.status !== 0) throw new Error(revoke.stderr);
  const other = cliJson<{ key: string }>(dataDir, ['keys', 'create', '--account', 'other']);
  cliJson(dataDir, ['credits', 'grant', '600', '--account', 'other']);
  await server.start();

  const songPath = join(songsDir, 'song.wav');
  writeSong(songPath, 1);
  const song = readFileSync(songPath);
  const reservations = [];
  for (let i = 0; i < 40; i++) {
    const length = 1 + ((i * 977) % 4096);
    const reply = await api(server.url, key, 'POST', '/audio/uploads', { body: { filename: `r${i}.wav`, contentType: 'audio/wav', contentLength: length } });
    const data = reply.json.data as { uploadId: string; uploadHeaders: Record<string, string> };
    reservations.push({ id: data.uploadId, token: Object.values(data.uploadHeaders)[0] as string, length });
  }
  const garbageUploads = [];
  for (let i = 0; i < 6; i++) garbageUploads.push(await upload(server.url, key, randomBytes(256 + i * 1000), `garbage${i}.wav`));
  const audioUploads = [];
  for (let i = 0; i < 4; i++) audioUploads.push(await upload(server.url, key, song, `audio${i}.wav`));
  const foreignUpload = await upload(server.url, other.key, song, 'foreign.wav');

  const first = await api(server.url, key, 'POST', '/audio/splits', { body: { input: await upload(server.url, key, song), stemModel: '4s' } });
  const views = await server.client(key).waitForSplits([first.json.data.id], 120_000);
  const view = views.get(first.json.data.id);
  if (view?.status !== 'succeeded') throw new Error(`the setup job did not succeed: ${JSON.stringify(view)}`);
  const [setting] = queryDb<{ value: string }>(dataDir, `SELECT value FROM settings WHERE key = 'urlSigningKey'`);
  return {
    key,
    revokedKey: revoked.key,
    otherAccountKey: other.key,
    reservations,
    garbageUploads,
    audioUploads,
    foreignUpload,
    // The key its stem URLs were issued to (they name it, and the signature covers it).
    succeededSplit: {
      id: first.json.data.id,
      stems: Object.keys(view.stems ?? {}),
      keyId: new URL(Object.values(view.stems ?? {})[0] ?? 'http://x/').searchParams.get('keyId') ?? '',
    },
    signingKey: Buffer.from(setting?.value ?? '', 'hex'),
    nonce: `fz${randomBytes(6).toString('hex')}`,
  };
}

// ---------------------------------------------------------------------------------------------
// Sending and judging

interface Answer {
  readonly status: number | undefined;
  readonly contentType: string;
  readonly body: string;
}

async function send(server: ServeProcess, request: FuzzRequest): Promise<Answer> {
  if (request.transport === 'raw') {
    const result = await rawRequest({ port: Number(new URL(server.url).port), head: request.head, body: request.body, then: request.then, timeoutMs: 5000 });
    return {
      status: result.status,
      contentType: /content-type: ([^\r\n]*)/i.exec(result.response)?.[1] ?? '',
      body: result.response.split('\r\n\r\n').slice(1).join('\r\n\r\n'),
    };
  }
  try {
    const response = await fetch(`${server.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(request.body !== undefined ? { body: request.body } : {}),
      signal: AbortSignal.timeout(20_000),
    });
    const body = request.label.startsWith('GET /v1/files') && response.status < 300 ? (await response.arrayBuffer(), '') : await response.text();
    return { status: response.status, contentType: response.headers.get('content-type') ?? '', body };
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause;
    return { status: undefined, contentType: '', body: `${(error as Error).message}${cause ? `: ${cause.message}` : ''}` };
  }
}

/** The complaint about an answer, or undefined when it is fine. */
function judge(request: FuzzRequest, answer: Answer): string | undefined {
  if (answer.status !== undefined && answer.status >= 500) return `HTTP ${answer.status}: ${answer.body.slice(0, 300)}`;
  const oracle = request.oracle?.(answer.status);
  if (oracle) return oracle;
  // Methods Node's HTTP parser does not know (FOO) get its bare 400 before the app sees them.
  if (request.transport === 'fetch' && answer.status !== undefined && answer.status >= 400 && ENVELOPED_METHODS.has(request.method)) {
    const parsed = parseJsonOr(answer.body, undefined) as { success?: unknown; error?: { code?: unknown; message?: unknown } } | undefined;
    const code = parsed?.error?.code;
    if (parsed?.success !== false || typeof code !== 'string' || !API_CODES.has(code) || typeof parsed?.error?.message !== 'string') {
      return `HTTP ${answer.status} without the error envelope: ${answer.body.slice(0, 200)}`;
    }
  }
  if (request.transport === 'fetch' && answer.status === undefined) return `no answer (${answer.body})`;
  return undefined;
}

function describe(request: FuzzRequest): string {
  const text =
    request.transport === 'fetch'
      ? `${request.method} ${request.path} ${JSON.stringify(request.headers)} ${typeof request.body === 'string' ? request.body : `<${request.body?.length ?? 0} bytes>`}`
      : `${request.head.split('\r\n')[0]} … <${request.body.length} bytes, then ${request.then}>`;
  return text.length > 600 ? `${text.slice(0, 600)}…` : text;
}

// ---------------------------------------------------------------------------------------------
// After the fuzzing

/** Every accepted upload is exactly its reserved length; nothing else is on disk for uploads. */
function checkUploads(dataDir: string): string[] {
  const problems: string[] = [];
  const rows = queryDb<{ id: string; status: string; contentLength: number }>(dataDir, 'SELECT id, status, contentLength FROM uploads');
  for (const row of rows) {
    const path = join(dataDir, 'uploads', row.id);
    const size = statSizeOrUndefined(path);
    if (row.status === 'complete' || row.status === 'used') {
      if (size !== row.contentLength) problems.push(`upload ${row.id} is ${row.status} with ${size} bytes on disk, reserved ${row.contentLength}`);
    } else if (size !== undefined) {
      problems.push(`upload ${row.id} is ${row.status} but a file is on disk`);
    }
  }
  return problems;
}

function statSizeOrUndefined(path: string): number | undefined {
  try {
    return statSync(path).size;
  } catch {
    return undefined;
  }
}

/** The data dir holds only what its layout names; its parent holds only the data dir and our songs. */
function checkLayout(workRoot: string, dataDir: string): string[] {
  const allowed = [
    /^stemsplit\.sqlite(-wal|-shm)?$/,
    /^serve\.lock$/,
    /^uploads\/upl_[0-9A-HJKMNP-TV-Z]{26}$/,
    /^sources\/split_[0-9A-HJKMNP-TV-Z]{26}$/,
    /^stems\/split_[0-9A-HJKMNP-TV-Z]{26}\/[a-z][a-z0-9_-]{0,31}\.mp3$/,
  ];
  const problems = listFiles(dataDir)
    .filter((file) => !allowed.some((pattern) => pattern.test(file)))
    .map((file) => `unexpected file in the data dir: ${file}`);
  const top = readdirSync(workRoot).filter((name) => name !== 'data' && name !== 'songs' && name !== 'strace.log');
  if (top.length > 0) problems.push(`unexpected files beside the data dir: ${top.join(', ')}`);
  return problems;
}

/** Looks for any file named with the nonce the traversal names carried. */
function findEscapes(nonce: string, workRoot: string): string[] {
  const roots = ['/tmp', ROOT, homedir(), workRoot].filter((root, i, all) => all.indexOf(root) === i);
  const found = spawnSync('find', [...roots, '(', '-name', 'node_modules', '-o', '-name', '.git', ')', '-prune', '-o', '-name', `*${nonce}*`, '-print'], {
    encoding: 'utf8',
  });
  const top = spawnSync('find', ['/', '/etc', '-maxdepth', '1', '-name', `*${nonce}*`], { encoding: 'utf8' });
  return `${found.stdout}${top.stdout}`
    .split('\n')
    .filter(Boolean)
    .map((path) => `a file escaped the data dir: ${path}`);
}

// ---------------------------------------------------------------------------------------------
// strace: every file the server (and its ffmpeg children) creates, writes, renames or deletes

const TRACED_SYSCALLS = 'open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,unlink,unlinkat,rmdir,truncate,connect,sendto';

/** Writes that are not the server's own: Node's and tsx's caches, devices. */
function allowedOutside(path: string): boolean {
  return path.startsWith('/dev/') || path.startsWith('/proc/') || /\/tsx-\d+\//.test(path);
}

/** Whether every thread of `pid` has a tracer (`TracerPid` in /proc/<pid>/task/<tid>/status). */
function everyThreadTraced(pid: number): boolean {
  const tids = readdirSync(`/proc/${pid}/task`);
  return tids.every((tid) => /^TracerPid:\s+[1-9]/m.test(readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8')));
}

function startStrace(
  server: ServeProcess,
  workRoot: string,
): { attached(): Promise<void>; finish(): Promise<{ writes: string[]; remotes: string[] }> } | undefined {
  if (spawnSync('strace', ['-V']).status !== 0 || server.pid === undefined) return undefined;
  const logFile = join(workRoot, 'strace.log');
  const tracer: ChildProcess = spawn('strace', ['-f', '-y', '-qq', '-e', `trace=${TRACED_SYSCALLS}`, '-o', logFile, '-p', String(server.pid)], {
    stdio: 'ignore',
  });
  const pid = server.pid;
  return {
    /** Resolves once the kernel names a tracer for every thread of the server (strace -f attaches them one by one). */
    async attached() {
      const deadline = Date.now() + 10_000;
      while (!everyThreadTraced(pid)) {
        if (tracer.exitCode !== null || Date.now() > deadline) throw new Error(`strace did not attach to ${pid}`);
        await sleep(10);
      }
    },
    async finish() {
      await new Promise<void>((resolve) => (tracer.exitCode !== null ? resolve() : tracer.once('exit', () => resolve())));
      const log = readFileSync(logFile, 'utf8');
      return { writes: parseStraceWrites(log), remotes: parseStraceRemotes(log) };
    },
  };
}

/** Absolute paths of successful writes in an `strace -y` log. */
export function parseStraceWrites(log: string): string[] {
  const writes: string[] = [];
  for (const line of joinResumed(log.split('\n'))) {
    const call = /^\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<([^>]*)>)?/.exec(line);
    if (!call || Number(call[3]) < 0) continue;
    const [, name = '', args = '', , opened] = call;
    if (name === 'connect' || name === 'sendto') continue;
    if (name.startsWith('open') || name === 'creat') {
      if (name !== 'creat' && !/O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND/.test(args)) continue;
      if (opened) writes.push(opened);
      continue;
    }
    // Path arguments, each resolved against the directory fd printed before it (`AT_FDCWD</cwd>`, `5</dir>`).
    let base = '';
    for (const arg of args.matchAll(/(?:[\w]+<([^>]*)>)|"((?:[^"\\]|\\.)*)"/g)) {
      if (arg[1] !== undefined) base = arg[1];
      else if (arg[2] !== undefined) writes.push(arg[2].startsWith('/') ? arg[2] : `${base}/${arg[2]}`);
    }
  }
  return writes;
}

/** Every IP address the server (or a child) connected or sent to, from an `strace` log; failed attempts count too. */
export function parseStraceRemotes(log: string): string[] {
  const remotes: string[] = [];
  for (const line of joinResumed(log.split('\n'))) {
    if (!/^\d+\s+(connect|sendto)\(/.test(line)) continue;
    const v4 = /sin_addr=inet_addr\("([^"]+)"\)/.exec(line)?.[1];
    const v6 = /inet_pton\(AF_INET6, "([^"]+)"/.exec(line)?.[1];
    if (v4 ?? v6) remotes.push((v4 ?? v6) as string);
  }
  return remotes;
}

/** Rejoins `strace -f` calls split by another thread: `… <unfinished ...>` + `<... name resumed> …`. */
function joinResumed(lines: readonly string[]): string[] {
  const pending = new Map<string, string>();
  const out: string[] = [];
  for (const line of lines) {
    const pid = /^(\d+)\s/.exec(line)?.[1] ?? '';
    if (line.endsWith('<unfinished ...>')) {
      pending.set(pid, line.slice(0, -'<unfinished ...>'.length).trimEnd());
      continue;
    }
    const resumed = /^\d+\s+<\.\.\. \w+ resumed>(.*)$/.exec(line);
    if (resumed) {
      out.push(`${pending.get(pid) ?? ''}${resumed[1] ?? ''}`);
      pending.delete(pid);
    } else {
      out.push(line);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

export function formatFuzz(r: FuzzReport): string {
  const rows = Object.entries(r.byEndpoint).map(([endpoint, counts]) => [
    endpoint,
    Object.values(counts).reduce((a, b) => a + b, 0),
    Object.entries(counts)
      .sort()
      .map(([status, n]) => `${status}: ${n}`)
      .join(', '),
  ]);
  return [
    table(['endpoint', 'requests', 'answers'], rows),
    '',
    table(
      ['attack', 'requests', 'succeeded'],
      Object.entries(r.threats)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([threat, t]) => [threat, t.sent, t.accepted]),
    ),
    '',
    table(
      [
        'requests',
        '5xx',
        'server crashes',
        'jobs created',
        'writes traced (strace)',
        'writes outside the data dir',
        'outbound connections (off loopback)',
        'ledger balanced',
        'time',
      ],
      [
        [
          r.requests,
          r.serverErrors,
          r.problems.some((p) => p.includes('died')) ? 1 : 0,
          r.jobsCreated,
          r.straced ? r.writesTraced : 'strace not used',
          r.writesOutsideDataDir.length,
          r.straced ? `${r.connectionsTraced} (${r.connectionsOffLoopback.length})` : 'strace not used',
          r.ledger.problems.length === 0 ? 'yes' : 'NO',
          `${r.seconds.toFixed(0)} s`,
        ],
      ],
    ),
  ].join('\n');
}
