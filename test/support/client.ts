/**
 * The one API client of the tests, benchmarks and reliability scripts: requests with a bearer
 * key, the upload flow the public SDKs use, and the one way to wait for a split. Only the server
 * it is given is contacted (always a loopback address here).
 */

export interface Reply {
  readonly status: number;
  readonly headers: Headers;
  readonly text: string;
  /** The parsed body, or undefined when it is not JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  readonly json: any;
}

export interface RequestInit {
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  /** Another key for this request; null sends none. */
  readonly key?: string | null;
}

/** Where the server is: its origin, or a function giving its current one (a server restarted on another port). */
export type Origin = string | (() => string);

/** An upload reserved with POST /audio/uploads: where its bytes go and with which headers. */
export interface Reservation {
  readonly uploadId: string;
  readonly uploadUrl: string;
  readonly uploadHeaders: Record<string, string>;
}

export interface UploadedInput {
  readonly type: 'uploaded_file';
  readonly uploadId: string;
  readonly fileUrl: string;
  readonly storageKey: string;
}

/** A job as GET /audio/splits/{id} shows it (the fields the harness reads). */
export interface SplitView {
  readonly id: string;
  readonly status: 'queued' | 'processing' | 'succeeded' | 'failed';
  readonly progress: number;
  readonly stems?: Record<string, string>;
  readonly error: { code: string; message: string } | null;
  readonly [field: string]: unknown;
}

/** How to wait for one split. */
export interface SplitWait {
  /** Gives up (throws) after this long; 120 s unless given. */
  readonly timeoutMs?: number;
  /** The state waited for; a terminal status unless given. */
  readonly until?: (split: SplitView) => boolean;
  /** Time between two polls; 100 ms unless given. */
  readonly everyMs?: number;
}

const TERMINAL = new Set(['succeeded', 'failed']);

export function isTerminal(split: SplitView): boolean {
  return TERMINAL.has(split.status);
}

export function parseJsonOr<T>(text: string, fallback: T): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return fallback;
  }
}

export class ApiClient {
  readonly #origin: Origin;

  /**
   * @param origin the server's origin, e.g. http://127.0.0.1:8787 (paths are under /v1), or a
   *   function giving the current one, read at each request
   * @param key the API key sent as a bearer token, or null for none
   */
  constructor(
    origin: Origin,
    readonly key: string | null,
  ) {
    this.#origin = origin;
  }

  get origin(): string {
    return typeof this.#origin === 'function' ? this.#origin() : this.#origin;
  }

  get base(): string {
    return `${this.origin}/v1`;
  }

  async request(method: string, path: string, init: RequestInit = {}): Promise<Reply> {
    const headers: Record<string, string> = { ...init.headers };
    const key = init.key === undefined ? this.key : init.key;
    if (key !== null) headers['authorization'] = `Bearer ${key}`;
    let body: string | undefined;
    if (init.body !== undefined) {
      body = typeof init.body === 'string' ? init.body : JSON.stringify(init.body);
      headers['content-type'] ??= 'application/json';
    }
    const response = await fetch(`${this.base}${path}`, { method, headers, ...(body !== undefined ? { body } : {}) });
    const text = await response.text();
    return { status: response.status, headers: response.headers, text, json: parseJsonOr(text, undefined) };
  }

  /** Reserves an upload of `length` bytes. Throws unless the server answers 200. */
  async reserveUpload(length: number, filename = 'song.wav', contentType = 'audio/wav'): Promise<Reservation> {
    const reserved = await this.request('POST', '/audio/uploads', { body: { filename, contentType, contentLength: length } });
    if (reserved.status !== 200) throw new Error(`reserve answered ${reserved.status}: ${reserved.text}`);
    const { uploadId, uploadUrl, uploadHeaders } = reserved.json.data as Reservation;
    return { uploadId, uploadUrl, uploadHeaders };
  }

  /** Sends the bytes of a reserved upload to its uploadUrl and returns the split input. Throws unless the server answers 200. */
  async sendUpload(reservation: Reservation, bytes: Buffer, contentType = 'audio/wav', method: 'PUT' | 'POST' = 'PUT'): Promise<UploadedInput> {
    const sent = await fetch(reservation.uploadUrl, { method, headers: { ...reservation.uploadHeaders, 'content-type': contentType }, body: bytes });
    const result = (await sent.json()) as { data: { url: string; key: string } };
    if (sent.status !== 200) throw new Error(`upload answered ${sent.status}: ${JSON.stringify(result)}`);
    return { type: 'uploaded_file', uploadId: reservation.uploadId, fileUrl: result.data.url, storageKey: result.data.key };
  }

  /** Reserves an upload, sends the bytes to its uploadUrl (PUT, like the SDKs) and returns the split input. */
  async upload(bytes: Buffer, filename = 'song.wav', contentType = 'audio/wav', method: 'PUT' | 'POST' = 'PUT'): Promise<UploadedInput> {
    return this.sendUpload(await this.reserveUpload(bytes.length, filename, contentType), bytes, contentType, method);
  }

  /** Polls one job until it reaches the state waited for (by default, terminal); its last answer. Throws after the timeout. */
  async waitForSplit(id: string, wait: SplitWait = {}): Promise<Reply> {
    const { timeoutMs = 120_000, until = isTerminal, everyMs = 100 } = wait;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const reply = await this.request('GET', `/audio/splits/${id}`);
      const split = reply.json?.data as SplitView | undefined;
      if (split && until(split)) return reply;
      if (Date.now() > deadline) throw new Error(`split ${id} still ${String(split?.status)} after ${timeoutMs} ms`);
      await sleep(everyMs);
    }
  }

  /**
   * Polls several jobs until every one is terminal or the deadline passes, riding out a server
   * that is down or restarting (give the client a function for an origin that moves); returns the
   * last view of each job seen, terminal or not.
   */
  async waitForSplits(ids: readonly string[], timeoutMs: number): Promise<Map<string, SplitView>> {
    const views = new Map<string, SplitView>();
    const deadline = Date.now() + timeoutMs;
    let open = [...ids];
    while (open.length > 0 && Date.now() < deadline) {
      const still: string[] = [];
      for (const id of open) {
        const reply = await this.request('GET', `/audio/splits/${id}`).catch(() => undefined);
        if (reply?.status === 200) views.set(id, reply.json.data as SplitView);
        if (reply?.status !== 200 || !isTerminal(reply.json.data as SplitView)) still.push(id);
      }
      open = still;
      if (open.length > 0) await sleep(250);
    }
    return views;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
