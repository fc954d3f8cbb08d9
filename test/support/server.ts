/** A real server on a loopback port over a real SQLite file in a temporary data dir. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { resolveConfig, type ConfigInput } from '../../src/config.js';
import { startServer, type RunningServer, type ServerOptions } from '../../src/server.js';

export interface TestServer {
  readonly server: RunningServer;
  readonly base: string;
  readonly key: string;
  readonly dataDir: string;
  request(method: string, path: string, init?: { body?: unknown; headers?: Record<string, string>; key?: string | null }): Promise<ApiResponse>;
  close(): Promise<void>;
}

export interface ApiResponse {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly json: any;
}

export function tempDir(prefix = 'stemsplit-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function startTestServer(input: ConfigInput = {}, options: ServerOptions = {}): Promise<TestServer> {
  const dataDir = input.dataDir ?? tempDir();
  const config = resolveConfig({ host: '127.0.0.1', port: 0, ...input, dataDir }, {});
  const server = await startServer(config, { log: () => undefined, ...options });
  const key = server.data.accounts.createKey('default', 'test').key;
  const base = `${server.url}/v1`;
  const request: TestServer['request'] = async (method, path, init = {}) => {
    const headers: Record<string, string> = { ...init.headers };
    const bearer = init.key === undefined ? key : init.key;
    if (bearer !== null) headers['authorization'] = `Bearer ${bearer}`;
    let body: string | undefined;
    if (init.body !== undefined) {
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  };
  return {
    server,
    base,
    key,
    dataDir,
    request,
    close: async () => {
      await server.close();
      if (!input.dataDir) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Reserves an upload, sends the bytes like the public SDKs do, and returns the split input. */
export async function uploadFile(t: TestServer, bytes: Buffer, filename = 'song.wav', contentType = 'audio/wav') {
  const reserved = await t.request('POST', '/audio/uploads', { body: { filename, contentType, contentLength: bytes.length } });
  if (reserved.status !== 200) throw new Error(`reserve failed: ${reserved.text}`);
  const { uploadId, uploadUrl, uploadHeaders } = reserved.json.data;
  const sent = await fetch(uploadUrl, { method: 'POST', headers: { ...uploadHeaders, 'content-type': contentType }, body: bytes });
  const result = (await sent.json()) as { success: boolean; data: { url: string; key: string } };
  if (sent.status !== 200) throw new Error(`upload failed: ${JSON.stringify(result)}`);
  return { type: 'uploaded_file' as const, uploadId: uploadId as string, fileUrl: result.data.url, storageKey: result.data.key };
}

/** Polls a split until it is terminal. */
export async function waitForSplit(t: TestServer, id: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const response = await t.request('GET', `/audio/splits/${id}`);
    const status = response.json?.data?.status;
    if (status === 'succeeded' || status === 'failed') return response;
    if (Date.now() > deadline) throw new Error(`split ${id} still ${status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
