/**
 * Uploads cut off mid-stream: the client vanishes part-way, stops sending early, sends too few
 * or too many bytes, or the server is killed while bytes arrive. Each time: no partial file is
 * accepted or left behind, the reservation can be retried, a split naming the unfinished upload
 * is refused with a clear message, and the retried upload makes a job that succeeds, charged once.
 *
 *   node --import tsx scripts/reliability/upload-cut.ts [--json]
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../temp-dir.js';
import { api, auditLedger, checkStems, leftoverPartials, provision, queryDb, ServeProcess, sleep, table, tidyUp, writeSong } from './common.js';
import { rawRequest, type RawResult } from './raw-http.js';

export interface CutCase {
  readonly name: string;
  /** What the server answered the cut transfer (when an answer could reach the client). */
  readonly answer: string;
  /** Whether a `.partial` file existed while the transfer was under way (proves it was mid-stream). */
  readonly partialSeenMidway: boolean;
  /** What a split naming the unfinished upload was told. */
  readonly splitRefusal: string;
  /** How long after the cut the reservation could be retried (the server had noticed). */
  readonly noticedMs: number;
  readonly retriedJob: string;
  readonly ok: boolean;
}

export interface UploadCutReport {
  readonly cases: readonly CutCase[];
  readonly problems: string[];
}

type Cut = (port: number, path: string, token: string, bytes: Buffer, midway: () => Promise<void>) => Promise<RawResult>;

const head = (path: string, token: string, lines: readonly string[]) =>
  [`PUT ${path} HTTP/1.1`, 'Host: 127.0.0.1', `X-Stemsplit-Upload-Token: ${token}`, 'Content-Type: audio/wav', ...lines].join('\r\n');

/** The ways a transfer ends badly, each with the part of the song that got through. */
const CUTS: ReadonlyArray<readonly [string, Cut]> = [
  [
    'client vanishes after half the bytes',
    (port, path, token, bytes, midway) =>
      rawRequest({ port, head: head(path, token, [`Content-Length: ${bytes.length}`]), body: bytes.subarray(0, bytes.length >> 1), midway, then: 'destroy' }),
  ],
  [
    'client vanishes one byte short',
    (port, path, token, bytes, midway) =>
      rawRequest({ port, head: head(path, token, [`Content-Length: ${bytes.length}`]), body: bytes.subarray(0, bytes.length - 1), midway, then: 'destroy' }),
  ],
  [
    'client stops sending after a third (half-close)',
    (port, path, token, bytes, midway) =>
      rawRequest({
        port,
        head: head(path, token, [`Content-Length: ${bytes.length}`]),
        body: bytes.subarray(0, Math.floor(bytes.length / 3)),
        midway,
        then: 'end',
        timeoutMs: 10_000,
      }),
  ],
  [
    'chunked body that ends early',
    (port, path, token, bytes, midway) => {
      const part = bytes.subarray(0, bytes.length >> 1);
      const body = Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n0\r\n\r\n')]);
      return rawRequest({ port, head: head(path, token, ['Transfer-Encoding: chunked', 'Connection: close']), body, midway, then: 'wait', timeoutMs: 10_000 });
    },
  ],
  [
    'chunked body longer than reserved',
    (port, path, token, bytes, midway) => {
      const more = Buffer.concat([bytes, Buffer.alloc(1000)]);
      const body = Buffer.concat([Buffer.from(`${more.length.toString(16)}\r\n`), more, Buffer.from('\r\n0\r\n\r\n')]);
      return rawRequest({ port, head: head(path, token, ['Transfer-Encoding: chunked', 'Connection: close']), body, midway, then: 'wait', timeoutMs: 10_000 });
    },
  ],
];

export async function runUploadCut(log: (line: string) => void = () => undefined): Promise<UploadCutReport> {
  const dataDir = tempDir('stemsplit-cut-');
  const songPath = join(dataDir, 'song.wav');
  writeSong(songPath, 1.5);
  const song = readFileSync(songPath);
  const { key } = provision(dataDir);
  const server = new ServeProcess(dataDir, ['--rate-limit', '1000000']);
  await server.start();
  const cases: CutCase[] = [];
  const problems: string[] = [];
  const jobIds: string[] = [];

  /** One reservation, one bad transfer (or a kill), then the checks and a good retry. */
  const trial = async (name: string, badTransfer: (path: string, token: string, midway: () => Promise<void>) => Promise<string>) => {
    const reserved = await api(server.url, key, 'POST', '/audio/uploads', {
      body: { filename: 'cut.wav', contentType: 'audio/wav', contentLength: song.length },
    });
    const { uploadId, uploadUrl, uploadHeaders } = reserved.json.data as { uploadId: string; uploadUrl: string; uploadHeaders: Record<string, string> };
    const token = Object.values(uploadHeaders)[0] as string;
    const file = join(dataDir, 'uploads', uploadId);
    let partialSeenMidway = false;
    const midway = async () => {
      for (let i = 0; i < 40 && !partialSeenMidway; i++) {
        partialSeenMidway = existsSync(`${file}.partial`);
        await sleep(25);
      }
    };
    const answer = await badTransfer(new URL(uploadUrl).pathname, token, midway);
    // The server notices a vanished client when its socket errors: wait for that (a job may be
    // running and keeping the CPU busy), as a client retrying a moment later would.
    const cutAt = Date.now();
    const stateOf = () => queryDb<{ status: string }>(dataDir, 'SELECT status FROM uploads WHERE id = ?', uploadId)[0]?.status;
    while (stateOf() === 'uploading' && Date.now() - cutAt < 10_000) await sleep(20);
    const noticedMs = Date.now() - cutAt;
    const input = { type: 'uploaded_file', uploadId, fileUrl: uploadUrl, storageKey: `uploads/${uploadId}` };
    const refused = await api(server.url, key, 'POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    const [row] = queryDb<{ status: string }>(dataDir, 'SELECT status FROM uploads WHERE id = ?', uploadId);
    const leftovers = [existsSync(file) ? 'the file' : '', existsSync(`${file}.partial`) ? 'a .partial' : ''].filter(Boolean);
    // The server may have restarted on another port: the path is what names the upload.
    const retried = await fetch(`${server.url}${new URL(uploadUrl).pathname}`, { method: 'PUT', headers: uploadHeaders, body: song });
    const created = await api(server.url, key, 'POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    if (created.status === 200) jobIds.push(created.json.data.id as string);
    const ok =
      refused.status === 422 &&
      /not been uploaded/.test(refused.json?.error?.message ?? '') &&
      row?.status === 'pending' &&
      leftovers.length === 0 &&
      retried.status === 200 &&
      created.status === 200;
    const c: CutCase = {
      name,
      answer,
      partialSeenMidway,
      splitRefusal: `${refused.status} "${refused.json?.error?.message ?? refused.text}"`,
      noticedMs,
      retriedJob: `upload ${retried.status}, split ${created.status}${leftovers.length > 0 ? `; left behind: ${leftovers.join(', ')}` : ''}; reservation was ${row?.status}`,
      ok,
    };
    cases.push(c);
    if (!ok) problems.push(`${name}: ${JSON.stringify(c)}`);
    log(`${ok ? 'ok ' : 'BAD'} ${name}: ${answer}`);
  };

  try {
    for (const [name, cut] of CUTS) {
      await trial(name, async (path, token, midway) => {
        const result = await cut(Number(new URL(server.url).port), path, token, song, midway);
        if (result.status === undefined) return 'no answer (the client was gone)';
        const message = /"message":"([^"]*)"/.exec(result.response)?.[1] ?? '';
        return `${result.status} "${message}"`;
      });
    }
    await trial('server killed (SIGKILL) mid-transfer, then restarted', async (path, token, midway) => {
      const port = Number(new URL(server.url).port);
      const transfer = rawRequest({
        port,
        head: head(path, token, [`Content-Length: ${song.length}`]),
        body: song.subarray(0, song.length >> 1),
        midway: async () => {
          await midway();
          await server.kill();
        },
        then: 'wait',
        timeoutMs: 5_000,
      });
      await transfer;
      await server.start();
      return 'no answer (the server was gone); restarted';
    });

    const views = await server.client(key).waitForSplits(jobIds, 120_000);
    for (const id of jobIds) {
      const view = views.get(id);
      const stemProblems = await checkStems(view?.stems, 4);
      if (view?.status !== 'succeeded' || stemProblems.length > 0) problems.push(`job ${id} from a retried upload: ${view?.status} ${stemProblems.join(', ')}`);
    }
    const partials = leftoverPartials(dataDir);
    if (partials.length > 0) problems.push(`half-written files left: ${partials.join(', ')}`);
    if (server.errorLines().length > 0) problems.push(`the server logged errors: ${server.errorLines()[0]}`);
  } finally {
    await server.kill();
  }
  problems.push(...auditLedger(dataDir).problems);
  tidyUp(dataDir, problems);
  return { cases, problems };
}

export function formatUploadCut(r: UploadCutReport): string {
  return table(
    ['transfer', 'answer to the cut transfer', '.partial seen mid-way', 'retryable after', 'split naming the upload', 'then', 'as promised'],
    r.cases.map((c) => [
      c.name,
      c.answer,
      c.partialSeenMidway ? 'yes' : 'no',
      `${c.noticedMs} ms`,
      c.splitRefusal.replace(/upl_\w+/, 'upl_…'),
      c.retriedJob,
      c.ok ? 'yes' : 'NO',
    ]),
  );
}
