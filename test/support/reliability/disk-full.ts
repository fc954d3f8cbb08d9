/**
 * A full disk: the data dir is a small tmpfs (16 MiB), filled with a ballast file to leave just
 * so much room. Checks: an upload that does not fit is refused with a clear 507 and leaves no
 * file (and may be retried); a job whose stems do not fit fails with STORAGE_FAILED, is refunded
 * and leaves no half-written stem; with no room at all, the API answers clear errors and the
 * server does not crash; once room is made, everything works again and the ledger balances.
 *
 *   node --import tsx scripts/reliability/disk-full.ts [--json]
 *
 * Mounting needs root; as another user the script re-runs itself in a user namespace
 * (`unshare --user --map-root-user --mount`). Where neither works it says so and exits 2.
 * Webhooks go to a receiver on loopback, so the server runs with --allow-private-urls.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../temp-dir.js';
import {
  api,
  auditLedger,
  checkStems,
  leftoverPartials,
  provision,
  queryDb,
  ServeProcess,
  sleep,
  table,
  tidyUp,
  waitWebhooks,
  WebhookReceiver,
  writeSong,
  type Reply,
} from './common.js';

export interface DiskFullCase {
  readonly name: string;
  readonly freeBytes: number;
  readonly outcome: string;
  readonly ok: boolean;
}

export interface DiskFullReport {
  readonly mount: string;
  readonly cases: readonly DiskFullCase[];
  readonly problems: string[];
}

const SIZE_MB = 16;

/** Mounts a tmpfs of `sizeMb` at `dir`; returns how to unmount it, or undefined when not permitted. */
export function mountTmpfs(dir: string, sizeMb: number): (() => void) | undefined {
  const mounted = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m`, 'tmpfs', dir], { encoding: 'utf8' });
  if (mounted.status !== 0) return undefined;
  return () => void spawnSync('umount', ['-l', dir]);
}

function freeBytes(dir: string): number {
  const stats = statfsSync(dir);
  return stats.bavail * stats.bsize;
}

/** Writes (or rewrites) the ballast so that about `leave` bytes stay free. */
function leaveFree(dir: string, leave: number): number {
  const ballast = join(dir, 'ballast');
  rmSync(ballast, { force: true });
  const size = Math.max(0, freeBytes(dir) - leave);
  try {
    writeFileSync(ballast, Buffer.alloc(size));
  } catch {
    // ENOSPC at the very end is the point
  }
  return freeBytes(dir);
}

export async function runDiskFull(log: (line: string) => void = () => undefined): Promise<DiskFullReport> {
  const workRoot = tempDir('stemsplit-diskfull-');
  const dataDir = join(workRoot, 'data');
  mkdirSync(dataDir);
  const unmount = mountTmpfs(dataDir, SIZE_MB);
  if (!unmount) throw new MountRefused();
  const songPath = join(workRoot, 'song.wav');
  writeSong(songPath, 2);
  const song = readFileSync(songPath);
  const cases: DiskFullCase[] = [];
  const problems: string[] = [];
  const { key, secret } = provision(dataDir);
  const receiver = new WebhookReceiver(secret);
  const webhookUrl = await receiver.listen();
  const server = new ServeProcess(dataDir, ['--allow-private-urls', '--rate-limit', '1000000']);
  await server.start();
  const record = (name: string, free: number, outcome: string, ok: boolean) => {
    cases.push({ name, freeBytes: free, outcome, ok });
    if (!ok) problems.push(`${name}: ${outcome}`);
    log(`${ok ? 'ok ' : 'BAD'} ${name}: ${outcome}`);
  };
  const reserve = () =>
    api(server.url, key, 'POST', '/audio/uploads', { body: { filename: 'song.wav', contentType: 'audio/wav', contentLength: song.length } });
  const send = async (
    reply: Reply,
  ): Promise<{ status: number; json: { success: boolean; data?: { url: string; key: string }; error?: { code: string; message: string } } }> => {
    const { uploadUrl, uploadHeaders } = reply.json.data as { uploadUrl: string; uploadHeaders: Record<string, string> };
    const sent = await fetch(uploadUrl, { method: 'PUT', headers: uploadHeaders, body: song });
    return { status: sent.status, json: (await sent.json()) as never };
  };
  const split = async (reply: Reply, sent: { json: { data?: { url: string; key: string } } }) => {
    const input = { type: 'uploaded_file', uploadId: reply.json.data.uploadId, fileUrl: sent.json.data?.url, storageKey: sent.json.data?.key };
    return api(server.url, key, 'POST', '/audio/splits', { body: { input, stemModel: '4s', webhookUrl } });
  };
  const jobIds: string[] = [];

  try {
    // 1. An upload that does not fit: 507, a clear message, no file, and the upload can be retried.
    // The reservation itself is refused where the server sees the file cannot fit; else the bytes are.
    let free = leaveFree(dataDir, 96 * 1024);
    const tooBig = await reserve();
    const refused = tooBig.status === 507 ? { status: tooBig.status, json: tooBig.json as { error?: { code: string; message: string } } } : await send(tooBig);
    const uploadFiles = () => readdirNames(join(dataDir, 'uploads'));
    record(
      'upload larger than the free space',
      free,
      `HTTP ${refused.status} ${refused.json.error?.code}: "${refused.json.error?.message}"; files in uploads/: ${uploadFiles().length}`,
      refused.status === 507 && /disk space|no room/.test(refused.json.error?.message ?? '') && uploadFiles().length === 0,
    );

    // 2. Room for the upload but not for the stems: the job fails with STORAGE_FAILED and is refunded.
    rmSync(join(dataDir, 'ballast'));
    const reservation = tooBig.status === 507 ? await reserve() : tooBig;
    const retried = await send(reservation);
    free = leaveFree(dataDir, 128 * 1024);
    const created = await split(reservation, retried);
    record(
      'the retried upload, once there is room',
      free,
      `upload HTTP ${retried.status}, split HTTP ${created.status}`,
      retried.status === 200 && created.status === 200,
    );
    if (created.status === 200) {
      jobIds.push(created.json.data.id);
      const views = await server.client(key).waitForSplits([created.json.data.id], 120_000);
      const view = views.get(created.json.data.id);
      const stemDirs = readdirNames(join(dataDir, 'stems'));
      record(
        'stems that do not fit',
        free,
        `job ${view?.status} ${view?.error?.code ?? ''}; folders in stems/: ${stemDirs.length}`,
        view?.status === 'failed' && view.error?.code === 'STORAGE_FAILED' && stemDirs.length === 0,
      );
    }

    // 3. No room at all, not even for the database, while a job runs: clear errors, no crash.
    rmSync(join(dataDir, 'ballast'));
    const running = await reserve();
    const runningJob = await split(running, await send(running));
    if (runningJob.status === 200) jobIds.push(runningJob.json.data.id);
    free = leaveFree(dataDir, 0);
    const noRoom = await reserve();
    const credits = await api(server.url, key, 'GET', '/credits');
    record(
      'no free space: reserve an upload',
      free,
      `HTTP ${noRoom.status} ${noRoom.json?.error?.code ?? ''}: "${noRoom.json?.error?.message ?? ''}"; GET /credits HTTP ${credits.status}`,
      (noRoom.status === 200 || (noRoom.status === 507 && /disk/.test(noRoom.json?.error?.message ?? ''))) && credits.status === 200 && server.running,
    );
    await sleep(8_000);
    const [runningState] = queryDb<{ status: string }>(dataDir, 'SELECT status FROM splits WHERE id = ?', runningJob.json?.data?.id);
    record(
      'no free space: a job that was running, 8 s later',
      freeBytes(dataDir),
      `job ${runningState?.status}; server ${server.running ? 'running' : `exited ${JSON.stringify(server.exit)}`}`,
      server.running,
    );

    // 4. Room again: a new job succeeds, every job is terminal with its webhook, the books balance.
    rmSync(join(dataDir, 'ballast'));
    if (!server.running) await server.start();
    const again = await reserve();
    const sentAgain = await send(again);
    const recovered = await split(again, sentAgain);
    if (recovered.status === 200) jobIds.push(recovered.json.data.id);
    const views = await server.client(key).waitForSplits(jobIds, 120_000);
    const last = views.get(recovered.json?.data?.id);
    const stemProblems = last?.status === 'succeeded' ? await checkStems(last.stems, 4) : ['not succeeded'];
    record(
      'after making room: a new job',
      freeBytes(dataDir),
      `job ${last?.status}; stems: ${stemProblems.join(', ') || 'all download'}`,
      stemProblems.length === 0,
    );
    const earlier = views.get(runningJob.json?.data?.id);
    record(
      'after making room: the job that was running',
      freeBytes(dataDir),
      `job ${earlier?.status} ${earlier?.error?.code ?? ''}`,
      earlier?.status === 'succeeded' || earlier?.error?.code === 'STORAGE_FAILED',
    );
  } catch (error) {
    problems.push(
      `${(error as Error).message}; the server ${server.running ? 'runs' : `exited ${JSON.stringify(server.exit)}`}; its last words:\n${server.stderr.split('\n').slice(-15).join('\n')}`,
    );
  } finally {
    const missingHooks = await waitWebhooks(receiver, jobIds, 30_000);
    if (missingHooks.length > 0) problems.push(`${missingHooks.length} terminal jobs without a webhook`);
    await server.kill();
    await receiver.close();
    problems.push(...auditLedger(dataDir).problems);
    const partials = leftoverPartials(dataDir);
    if (partials.length > 0) problems.push(`half-written files left: ${partials.join(', ')}`);
    const orphans = queryDb<{ n: number }>(dataDir, `SELECT COUNT(*) AS n FROM uploads WHERE status = 'uploading'`)[0]?.n ?? 0;
    if (orphans > 0) problems.push(`${orphans} uploads stuck in "uploading"`);
    // A 507 is logged (an operator must know the disk is full); anything else logged as an error is a bug.
    const otherErrors = server.errorLines().filter((l) => !/disk holding the database is full/.test(l));
    if (otherErrors.length > 0) problems.push(`the server logged errors:\n${otherErrors.slice(0, 3).join('\n')}`);
    unmount();
  }
  tidyUp(workRoot, problems);
  return { mount: `tmpfs ${SIZE_MB} MiB`, cases, problems };
}

function readdirNames(dir: string): string[] {
  return spawnSync('ls', ['-A', dir], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
}

export class MountRefused extends Error {
  constructor() {
    super('cannot mount a tmpfs here (not root, and no user namespace)');
  }
}

export function formatDiskFull(r: DiskFullReport): string {
  return `data dir on ${r.mount}\n${table(
    ['case', 'free bytes', 'outcome', 'as promised'],
    r.cases.map((c) => [c.name, c.freeBytes, c.outcome.replaceAll('|', '/'), c.ok ? 'yes' : 'NO']),
  )}`;
}
