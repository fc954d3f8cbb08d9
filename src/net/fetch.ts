/**
 * The one outbound HTTP client. For user-supplied URLs (direct_url sources, webhooks) it is
 * guarded against SSRF: the host is resolved here, the address is checked, and the socket is
 * opened to exactly that address, so a DNS answer that changes between check and connect
 * (rebinding) cannot slip through. Every redirect hop is checked the same way. `TRUSTED` is the
 * mode for URLs the operator chose (the model catalog's hosts, a `--mirror`), which may be on
 * the local network.
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import { createWriteStream } from 'node:fs';
import { rename, rm } from 'node:fs/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import net, { isIP } from 'node:net';
import type { Duplex } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tls from 'node:tls';
import { isForbiddenAddress } from './address.js';

export class FetchRefused extends Error {
  override readonly name = 'FetchRefused';
}

/** Resolves a host name to the addresses it may be reached at. */
export type Resolver = (hostname: string) => Promise<string[]>;
/** Opens the socket for a checked address; replaced in tests to land on a loopback sink. */
export type Dialer = (target: { address: string; port: number; tls: boolean; servername: string }) => Duplex;

export interface GuardOptions {
  /** Skip the address check (`serve --allow-private-urls`, trusted LANs, tests). */
  readonly allowPrivate: boolean;
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
}

/** URLs the operator configured: any address may be reached. */
export const TRUSTED: GuardOptions = Object.freeze({ allowPrivate: true });

export interface RequestOptions extends GuardOptions {
  readonly method?: 'GET' | 'POST';
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  /** The whole exchange, redirects included, must finish within this (unset: no limit). */
  readonly timeoutMs?: number;
  /** The connection may be silent at most this long (default: timeoutMs). */
  readonly idleTimeoutMs?: number;
  readonly maxRedirects?: number;
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

const systemResolver: Resolver = async (hostname) => (await dnsLookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

const systemDialer: Dialer = ({ address, port, tls: secure, servername }) =>
  secure ? tls.connect({ host: address, port, servername: isIP(servername) ? undefined : servername }) : net.connect({ host: address, port });

/** Parses and checks a user-supplied URL's scheme; the host is checked when connecting. */
export function parseHttpUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FetchRefused(`not a valid URL: ${raw.slice(0, 200)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new FetchRefused(`only http and https URLs are allowed, got ${url.protocol}`);
  if (url.username || url.password) throw new FetchRefused('URLs with credentials are not allowed');
  return url;
}

/** Refuses a URL whose host is (or resolves to) a forbidden address, without connecting. */
export async function assertAllowedTarget(rawUrl: string, options: GuardOptions): Promise<void> {
  await checkedAddress(parseHttpUrl(rawUrl), options);
}

/** The address to connect to for `url`, after the SSRF check. */
async function checkedAddress(url: URL, options: GuardOptions): Promise<string> {
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const addresses = isIP(hostname)
    ? [hostname]
    : await (options.resolve ?? systemResolver)(hostname).catch((error: Error) => {
        throw new FetchRefused(`cannot resolve ${hostname}: ${error.message}`);
      });
  const address = addresses[0];
  if (address === undefined) throw new FetchRefused(`${hostname} has no address`);
  if (!options.allowPrivate && isForbiddenAddress(address)) {
    throw new FetchRefused(`${hostname} resolves to ${address}, a private or local address; refused`);
  }
  return address;
}

function requestOnce(url: URL, address: string, options: RequestOptions, signal: AbortSignal | undefined): Promise<IncomingMessage> {
  const secure = url.protocol === 'https:';
  const port = Number(url.port || (secure ? 443 : 80));
  const dial = options.dial ?? systemDialer;
  const client = secure ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(
      url,
      {
        method: options.method ?? 'GET',
        headers: { 'user-agent': 'stemsplit', ...options.headers },
        ...(signal ? { signal } : {}),
        createConnection: () => dial({ address, port, tls: secure, servername: url.hostname }) as net.Socket,
      },
      resolve,
    );
    request.on('error', reject);
    const idle = options.idleTimeoutMs ?? options.timeoutMs;
    if (idle !== undefined) request.setTimeout(idle, () => request.destroy(new FetchRefused(`no answer from ${url.host} within ${idle} ms`)));
    request.end(options.body);
  });
}

/**
 * Performs a request, following at most `maxRedirects` redirects (each one checked), and
 * returns the final response. The caller consumes or destroys its body.
 */
export async function guardedRequest(rawUrl: string, options: RequestOptions): Promise<IncomingMessage> {
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  let url = parseHttpUrl(rawUrl);
  let current = options;
  for (let hop = 0; ; hop++) {
    const address = await checkedAddress(url, current);
    const response = await requestOnce(url, address, current, signal);
    const location = response.headers.location;
    if (!REDIRECTS.has(response.statusCode ?? 0) || location === undefined) return response;
    response.resume();
    if (hop >= (options.maxRedirects ?? 5)) throw new FetchRefused(`too many redirects (more than ${options.maxRedirects ?? 5})`);
    url = parseHttpUrl(new URL(location, url).toString());
    // A 303 (and, by custom, 301/302 after POST) turns into a GET without a body.
    if (response.statusCode === 303 || (current.method === 'POST' && response.statusCode !== 307 && response.statusCode !== 308)) {
      const { body: _dropped, ...rest } = current;
      current = { ...rest, method: 'GET' };
    }
  }
}

/** What every download of this client reports, a source fetched for a job or a model pulled. */
export interface DownloadResult {
  readonly path: string;
  /** Bytes in the file. */
  readonly bytes: number;
  readonly contentType: string | undefined;
  /** The file name the URL suggests (last path segment). */
  readonly filename: string;
  /** Where a resumed download continued from (0: it started afresh). */
  readonly resumedFrom: number;
  /** The file's SHA-256, where the download checked or recorded it. */
  readonly sha256?: string;
}

/** Downloads `rawUrl` to `destination` (atomically, via a `.partial` file), at most `maxBytes`. */
export async function downloadToFile(
  rawUrl: string,
  destination: string,
  options: GuardOptions & { readonly maxBytes: number; readonly timeoutMs: number },
): Promise<DownloadResult> {
  const response = await guardedRequest(rawUrl, { ...options, method: 'GET' });
  const status = response.statusCode ?? 0;
  if (status < 200 || status > 299) {
    response.resume();
    throw new FetchRefused(`the URL answered HTTP ${status}`);
  }
  const declared = Number(response.headers['content-length'] ?? NaN);
  if (declared > options.maxBytes) {
    response.destroy();
    throw new FetchRefused(`the file is larger than ${options.maxBytes} bytes`);
  }
  const partial = `${destination}.partial`;
  let bytes = 0;
  response.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    if (bytes > options.maxBytes) response.destroy(new FetchRefused(`the file is larger than ${options.maxBytes} bytes`));
  });
  try {
    await pipeline(response, createWriteStream(partial));
    await rename(partial, destination);
  } catch (error) {
    await rm(partial, { force: true });
    throw error instanceof FetchRefused ? error : new FetchRefused(`download failed: ${(error as Error).message}`);
  }
  return { path: destination, bytes, contentType: response.headers['content-type'], filename: filenameOf(rawUrl), resumedFrom: 0 };
}

export function filenameOf(rawUrl: string): string {
  const segment = new URL(rawUrl).pathname.split('/').pop() ?? '';
  try {
    return decodeURIComponent(segment) || 'audio';
  } catch {
    return segment || 'audio';
  }
}
