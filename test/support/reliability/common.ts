/**
 * What every reliability script shares: `stemsplit serve` child processes over one data dir, with
 * an API client that follows them across restarts; a webhook receiver that checks signatures; the
 * credit ledger audit; and figures (percentiles, RSS). Only loopback is ever contacted.
 */
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import BetterSqlite3 from 'better-sqlite3';
import { writeSong } from '../audio.js';
import { ApiClient, parseJsonOr, sleep, type Reply, type UploadedInput } from '../client.js';
import { killHard, runCli, startServeProcess } from '../process.js';
import { receiver, type Received } from '../webhook-receiver.js';

export { killHard, runCli, writeSong };

// ---------------------------------------------------------------------------------------------
// Processes

/** One `stemsplit serve` child; restartable over the same data dir. */
export class ServeProcess {
  readonly dataDir: string;
  readonly args: readonly string[];
  readonly env: Record<string, string>;
  #child: ChildProcess | undefined;
  #url = '';
  /** stderr of every start, for "error:" lines (a 5xx is logged there with its stack). */
  stderr = '';
  starts = 0;

  constructor(dataDir: string, args: readonly string[], env: Record<string, string> = {}) {
    this.dataDir = dataDir;
    this.args = args;
    this.env = { STEMSPLIT_DATA_DIR: dataDir, ...env };
  }

  get url(): string {
    return this.#url;
  }

  /** A client of this server with `key` that follows it to its new port when it restarts. */
  client(key: string | null): ApiClient {
    return new ApiClient(() => this.#url, key);
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  /** How the last child ended: null while it runs. */
  get exit(): { code: number | null; signal: NodeJS.Signals | null } | null {
    if (!this.#child || this.running) return null;
    return { code: this.#child.exitCode, signal: this.#child.signalCode };
  }

  async start(): Promise<string> {
    const { child, url } = await startServeProcess(this.args, this.env);
    child.stderr?.on('data', (chunk: Buffer) => (this.stderr += chunk.toString()));
    this.#child = child;
    this.#url = url;
    this.starts++;
    return url;
  }

  async kill(): Promise<void> {
    if (this.#child) await killHard(this.#child);
  }

  /** Lines the app logged for 5xx answers (`error: <stack>`), over every start. */
  errorLines(): string[] {
    return this.stderr.split('\n').filter((line) => line.startsWith('error: '));
  }

  /** Resident memory of the server process, from /proc (Linux). */
  rssKb(): number | undefined {
    if (!this.#child?.pid) return undefined;
    try {
      return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${this.#child.pid}/status`, 'utf8'))?.[1]);
    } catch {
      return undefined;
    }
  }
}

/** Runs the CLI against a data dir and parses its `--json` output. */
export function cliJson<T>(dataDir: string, args: readonly string[]): T {
  const result = runCli([...args, '--json'], { STEMSPLIT_DATA_DIR: dataDir });
  if (result.status !== 0) throw new Error(`stemsplit ${args.join(' ')} failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as T;
}

/** A fresh data dir's API key and webhook signing secret, made with the CLI as an operator would. */
export function provision(dataDir: string): { key: string; secret: string } {
  const { key } = cliJson<{ key: string }>(dataDir, ['keys', 'create']);
  const { secret } = cliJson<{ secret: string }>(dataDir, ['webhook-secret', 'rotate']);
  return { key, secret };
}

// ---------------------------------------------------------------------------------------------
// API client

export type { Reply, UploadedInput };
export { parseJsonOr, sleep };

/** One request to the server at `base` (its origin) with `key`, through the harness's client. */
export function api(
  base: string,
  key: string | null,
  method: string,
  path: string,
  init: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply> {
  return new ApiClient(base, key).request(method, path, init);
}

/** Reserve, send the bytes (PUT, like the SDKs), and return the `uploaded_file` input. Throws on any failure. */
export function upload(base: string, key: string, bytes: Buffer, filename = 'song.wav'): Promise<UploadedInput> {
  return new ApiClient(base, key).upload(bytes, filename);
}

/** True when `bytes` start like an MP3 file: an ID3 tag or an MPEG audio frame sync. */
export function looksLikeMp3(bytes: Buffer): boolean {
  if (bytes.length < 4) return false;
  if (bytes.subarray(0, 3).toString('latin1') === 'ID3') return true;
  return bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0;
}

/** Downloads every stem of a succeeded job; returns the problems found (none is good). */
export async function checkStems(stems: Record<string, string> | undefined, expected: number): Promise<string[]> {
  if (!stems) return ['no stems'];
  const problems: string[] = [];
  if (Object.keys(stems).length !== expected) problems.push(`${Object.keys(stems).length} stems, expected ${expected}`);
  for (const [name, url] of Object.entries(stems)) {
    const response = await fetch(url);
    const bytes = Buffer.from(await response.arrayBuffer());
    if (response.status !== 200) problems.push(`${name}: HTTP ${response.status}`);
    else if (Number(response.headers.get('content-length')) !== bytes.length) problems.push(`${name}: short body`);
    else if (!looksLikeMp3(bytes)) problems.push(`${name}: not an MP3`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Webhooks

export interface WebhookDelivery {
  readonly deliveryId: string;
  readonly splitId: string;
  readonly status: string;
  readonly valid: boolean;
  readonly receivedAtMs: number;
}

/** The loopback webhook receiver (../webhook-receiver.ts) with a secret: each delivery verified, in order of arrival. */
export class WebhookReceiver {
  readonly #secret: string;
  #hook: Awaited<ReturnType<typeof receiver>> | undefined;
  url = '';

  constructor(secret: string) {
    this.#secret = secret;
  }

  get received(): WebhookDelivery[] {
    return (this.#hook?.received ?? []).map((delivery) => WebhookReceiver.#read(delivery));
  }

  static #read({ headers, body, receivedAtMs, signatureValid }: Received): WebhookDelivery {
    const event = parseJsonOr(body, {}) as { data?: { id?: string; status?: string } };
    return {
      deliveryId: String(headers['stemsplit-delivery'] ?? ''),
      splitId: event.data?.id ?? '',
      status: event.data?.status ?? '',
      valid: signatureValid === true,
      receivedAtMs,
    };
  }

  async listen(): Promise<string> {
    this.#hook = await receiver([], this.#secret);
    this.url = this.#hook.url;
    return this.url;
  }

  /** Valid deliveries per split id. */
  validBySplit(): Map<string, WebhookDelivery[]> {
    const bySplit = new Map<string, WebhookDelivery[]>();
    for (const d of this.received) if (d.valid) bySplit.set(d.splitId, [...(bySplit.get(d.splitId) ?? []), d]);
    return bySplit;
  }

  close(): Promise<void> {
    const server = this.#hook?.server;
    if (!server) return Promise.resolve();
    server.closeAllConnections();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}

/** Waits until every id has at least one valid delivery (or the deadline passes); returns the ids still missing. */
export async function waitWebhooks(receiver: WebhookReceiver, ids: readonly string[], timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const delivered = receiver.validBySplit();
    const missing = ids.filter((id) => !delivered.has(id));
    if (missing.length === 0 || Date.now() > deadline) return missing;
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// The ledger

export interface LedgerAudit {
  readonly balance: number;
  readonly grants: number;
  readonly charges: number;
  readonly refunds: number;
  readonly jobs: number;
  /** Every broken invariant, in words; empty when the books balance. */
  readonly problems: string[];
}

/**
 * Reads the SQLite file directly (read-only, beside a running server or after it) and checks:
 * balance = grants − charges + refunds; one charge per job, equal to its creditsUsed; one refund
 * for each failed job and none for any other.
 */
export function auditLedger(dataDir: string, account = 'default'): LedgerAudit {
  const db = new BetterSqlite3(join(dataDir, 'stemsplit.sqlite'), { readonly: true, fileMustExist: true });
  try {
    const acct = db.prepare('SELECT id, balance FROM accounts WHERE name = ?').get(account) as { id: string; balance: number };
    const sum = (kind: string) =>
      Number((db.prepare('SELECT COALESCE(SUM(amount), 0) AS s FROM ledger WHERE accountId = ? AND kind = ?').get(acct.id, kind) as { s: number }).s);
    const grants = sum('grant');
    const charges = -sum('charge');
    const refunds = sum('refund');
    const problems: string[] = [];
    if (acct.balance !== grants - charges + refunds) {
      problems.push(`balance ${acct.balance} ≠ grants ${grants} − charges ${charges} + refunds ${refunds}`);
    }
    const rows = db
      .prepare(
        `SELECT s.id, s.status, s.creditsUsed,
           (SELECT COUNT(*) FROM ledger l WHERE l.splitId = s.id AND l.kind = 'charge') AS nCharges,
           (SELECT COALESCE(-SUM(amount), 0) FROM ledger l WHERE l.splitId = s.id AND l.kind = 'charge') AS charged,
           (SELECT COUNT(*) FROM ledger l WHERE l.splitId = s.id AND l.kind = 'refund') AS nRefunds,
           (SELECT COALESCE(SUM(amount), 0) FROM ledger l WHERE l.splitId = s.id AND l.kind = 'refund') AS refunded
         FROM splits s WHERE s.accountId = ?`,
      )
      .all(acct.id) as Array<{ id: string; status: string; creditsUsed: number; nCharges: number; charged: number; nRefunds: number; refunded: number }>;
    for (const r of rows) {
      if (r.nCharges !== 1 || r.charged !== r.creditsUsed) problems.push(`${r.id}: ${r.nCharges} charges totalling ${r.charged}, creditsUsed ${r.creditsUsed}`);
      const refundsExpected = r.status === 'failed' ? 1 : 0;
      if (r.nRefunds !== refundsExpected || (refundsExpected === 1 && r.refunded !== r.creditsUsed)) {
        problems.push(`${r.id} (${r.status}): ${r.nRefunds} refunds totalling ${r.refunded}`);
      }
    }
    const orphans = db.prepare(`SELECT COUNT(*) AS n FROM ledger WHERE kind != 'grant' AND splitId NOT IN (SELECT id FROM splits)`).get() as { n: number };
    if (orphans.n > 0) problems.push(`${orphans.n} charges or refunds without a job`);
    return { balance: acct.balance, grants, charges, refunds, jobs: rows.length, problems };
  } finally {
    db.close();
  }
}

/** Runs a read-only query on a data dir's database. */
export function queryDb<T>(dataDir: string, sqlText: string, ...params: unknown[]): T[] {
  const db = new BetterSqlite3(join(dataDir, 'stemsplit.sqlite'), { readonly: true, fileMustExist: true });
  try {
    return db.prepare(sqlText).all(...params) as T[];
  } finally {
    db.close();
  }
}

// ---------------------------------------------------------------------------------------------
// Files

/** Every file under `dir`, relative to it. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (current: string) => {
    for (const entry of readdirSync(current, { withFileTypes: true })) {
      const full = join(current, entry.name);
      if (entry.isDirectory()) walk(full);
      else out.push(relative(dir, full));
    }
  };
  walk(dir);
  return out.sort();
}

/** Removes a run's folder when every promise held; a failed run keeps it to be looked at. */
export function tidyUp(dir: string, problems: string[]): void {
  if (problems.length === 0) rmSync(dir, { recursive: true, force: true });
  else problems.push(`(the run's files are kept in ${dir})`);
}

/** Files and folders a crash or a failed write left half-done: `.partial` names. */
export function leftoverPartials(dataDir: string): string[] {
  return listFiles(dataDir).filter((file) => file.includes('.partial'));
}

// ---------------------------------------------------------------------------------------------
// Figures

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

/** A seeded PRNG (mulberry32), so a run can be repeated with `--seed`. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Prints a markdown table. */
export function table(headers: readonly string[], rows: ReadonlyArray<ReadonlyArray<string | number>>): string {
  const line = (cells: ReadonlyArray<string | number>) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

/** True when this module is the script node was started with (so importing it from a test runs nothing). */
export function isMain(importMetaUrl: string): boolean {
  return process.argv[1] !== undefined && new URL(importMetaUrl).pathname === process.argv[1];
}
