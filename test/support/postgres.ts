/**
 * PostgreSQL for tests. `.ci/run` starts a throwaway cluster and names it in
 * STEMSPLIT_TEST_DATABASE_URL; without it, a cluster is started here from the server binaries
 * Debian installs (initdb in a temp dir, a loopback port, stopped when the process exits). Each
 * `freshDatabase()` is a new, empty database, dropped by its `drop()`; `relayTo` puts a loopback
 * relay in front of one that a test cuts and restores, as a network outage would.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, Socket, type Server } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import pg from 'pg';
import { runningInCi } from './ci.js';

export interface TestDatabase {
  readonly url: string;
  drop(): Promise<void>;
}

let cluster: Promise<string | undefined> | undefined;
let counter = 0;

/** Why PostgreSQL tests cannot run here, or undefined when they can. */
export async function postgresUnavailable(): Promise<string | undefined> {
  return (await clusterUrl()) ? undefined : 'no PostgreSQL: set STEMSPLIT_TEST_DATABASE_URL or install postgresql (Debian) so initdb exists';
}

/**
 * Why the PostgreSQL tests skip on this machine, or undefined when they run. CI provides
 * PostgreSQL (.ci/run), so there its absence is an error, not a skip.
 */
export async function postgresSkipReason(): Promise<string | undefined> {
  const reason = await postgresUnavailable();
  if (reason && runningInCi()) throw new Error(reason);
  return reason;
}

/** Runs a suite written for SQLite over PostgreSQL (`startTestServer` reads the switch), or skips it in words. */
export async function suiteOnPostgres(name: string, load: () => Promise<unknown>): Promise<void> {
  const skip = await postgresSkipReason();
  if (skip) {
    test(`${name} on PostgreSQL`, { skip }, () => undefined);
    return;
  }
  process.env['STEMSPLIT_TEST_STORE'] = 'postgres';
  await load();
}

export async function freshDatabase(): Promise<TestDatabase> {
  const base = await clusterUrl();
  if (!base) throw new Error(await postgresUnavailable());
  const name = `stemsplit_test_${process.pid}_${++counter}_${Date.now().toString(36)}`;
  await admin(base, `create database ${name}`);
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () => admin(base, `drop database if exists ${name} with (force)`),
  };
}

async function admin(base: string, statement: string): Promise<void> {
  const url = new URL(base);
  url.pathname = '/postgres';
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

function clusterUrl(): Promise<string | undefined> {
  const given = process.env['STEMSPLIT_TEST_DATABASE_URL'];
  if (given) return Promise.resolve(given);
  return (cluster ??= startCluster());
}

function serverBinaries(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(root, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/** initdb refuses to run as root: as root, the cluster belongs to the `postgres` user. */
function asClusterOwner(command: string, args: string[]): { status: number | null; stderr: string } {
  const root = userInfo().uid === 0;
  const result = root ? spawnSync('runuser', ['-u', 'postgres', '--', command, ...args], { encoding: 'utf8' }) : spawnSync(command, args, { encoding: 'utf8' });
  return { status: result.status, stderr: `${result.stderr ?? ''}${result.error?.message ?? ''}` };
}

async function startCluster(): Promise<string | undefined> {
  const bin = serverBinaries();
  if (!bin) return undefined;
  const dir = mkdtempSync(join(tmpdir(), 'stemsplit-pg-'));
  if (userInfo().uid === 0) {
    const owner = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
    const group = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
    if (owner.status !== 0) return undefined;
    chownSync(dir, Number(owner.stdout.trim()), Number(group.stdout.trim()));
  }
  const data = join(dir, 'data');
  const init = asClusterOwner(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8']);
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const options = `-c listen_addresses=127.0.0.1 -p ${port} -k ${dir} -c max_connections=300`;
  const start = asClusterOwner(join(bin, 'pg_ctl'), ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']);
  if (start.status !== 0) throw new Error(`pg_ctl start failed: ${start.stderr}`);
  process.once('exit', () => {
    asClusterOwner(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop']);
    rmSync(dir, { recursive: true, force: true });
  });
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** A loopback TCP relay to PostgreSQL that the test can cut and restore, as a network outage would. */
export async function relayTo(target: URL): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void>; close(): Promise<void> }> {
  let server: Server | undefined;
  const sockets = new Set<Socket>();
  let port = 0;
  const listen = () =>
    new Promise<void>((resolve) => {
      if (server?.listening) return resolve();
      server = createServer((client) => {
        const upstream = new Socket();
        upstream.connect(Number(target.port), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on('close', () => sockets.delete(s));
          s.on('error', () => undefined);
        }
        client.pipe(upstream).pipe(client);
      });
      server.listen(port, '127.0.0.1', () => {
        port = (server?.address() as { port: number }).port;
        resolve();
      });
    });
  await listen();
  return {
    port,
    cut: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server?.close(() => resolve()));
    },
    restore: listen,
    close: async () => {
      for (const s of sockets) s.destroy();
      if (server?.listening) await new Promise<void>((resolve) => server?.close(() => resolve()));
    },
  };
}
