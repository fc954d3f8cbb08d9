/**
 * A real server on a loopback port over a temporary data dir: a real SQLite file in it, or, when
 * STEMSPLIT_TEST_STORE=postgres (the PostgreSQL runs of the API suites), a fresh PostgreSQL database.
 */
import { rmSync } from 'node:fs';
import { resolveConfig, type ConfigInput } from '../../src/config.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';
import { ApiClient, type Reply, type RequestInit, type UploadedInput } from './client.js';
import { freshDatabase, type TestDatabase } from './postgres.js';
import { tempDir } from './temp-dir.js';

export { tempDir };

export interface TestServer {
  readonly server: RunningServer;
  /** `<origin>/v1` */
  readonly base: string;
  readonly key: string;
  readonly dataDir: string;
  /** A client of this server with its key. */
  readonly client: ApiClient;
  request(method: string, path: string, init?: RequestInit): Promise<Reply>;
  close(): Promise<void>;
}

/** Kept for the tests' wording: a reply of the API. */
export type ApiResponse = Reply;

/** One PostgreSQL database per data dir, so a server restarted on a data dir finds its data again. */
const databases = new Map<string, Promise<TestDatabase>>();

function databaseOf(dataDir: string): Promise<TestDatabase> {
  let database = databases.get(dataDir);
  if (!database) {
    database = freshDatabase();
    databases.set(dataDir, database);
  }
  return database;
}

/** Whether this test process runs the API suites on PostgreSQL (test/*-postgres.test.ts set it). */
function onPostgres(): boolean {
  return process.env['STEMSPLIT_TEST_STORE'] === 'postgres';
}

/** Starts the real server in this process, on a loopback port, over a fresh data dir (unless one is given). */
export async function startTestServer(input: ConfigInput = {}, options: ServerOptions = {}): Promise<TestServer> {
  const dataDir = input.dataDir ?? tempDir();
  const database = input.databaseUrl === undefined && onPostgres() ? await databaseOf(dataDir) : undefined;
  const databaseUrl = input.databaseUrl ?? database?.url;
  const config = resolveConfig({ host: '127.0.0.1', port: 0, ...input, dataDir, databaseUrl }, {});
  const server = await startServer(config, { log: () => undefined, accessLog: () => undefined, ...options });
  const key = (await server.data.accounts.createKey('default', 'test')).key;
  const client = new ApiClient(server.url, key);
  return {
    server,
    base: client.base,
    key,
    dataDir,
    client,
    request: (method, path, init) => client.request(method, path, init),
    close: async () => {
      await server.close();
      if (!input.dataDir) {
        await database?.drop();
        rmSync(dataDir, { recursive: true, force: true });
      }
    },
  };
}

/** Reserves an upload, sends the bytes like the public SDKs do, and returns the split input. */
export function uploadFile(t: TestServer, bytes: Buffer, filename = 'song.wav', contentType = 'audio/wav'): Promise<UploadedInput> {
  return t.client.upload(bytes, filename, contentType, 'POST');
}

/** Polls a split until it is terminal. */
export function waitForSplit(t: TestServer, id: string, timeoutMs = 120_000): Promise<Reply> {
  return t.client.waitForSplit(id, { timeoutMs });
}
