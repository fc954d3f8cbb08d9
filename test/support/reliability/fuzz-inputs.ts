/**
 * The hostile requests of the fuzzer, as fast-check arbitraries: one per endpoint, each mixing
 * near-valid bodies with malformed JSON, wrong types, huge and unicode strings, path-traversal
 * names, bogus content types and lengths, forged tokens and forged or expired stem URLs.
 *
 * Each request carries its own oracle: what the answer must (not) be, beyond "never 5xx".
 * No request here can leave the machine: every URL a server might fetch names a loopback,
 * private or otherwise refused IP literal, or `localhost`.
 */
import { createHmac, randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { UploadedInput } from './common.js';

export interface FuzzTarget {
  readonly key: string;
  readonly revokedKey: string;
  readonly otherAccountKey: string;
  /** Reservations to send bytes to (some end up complete on the way). */
  readonly reservations: ReadonlyArray<{ readonly id: string; readonly token: string; readonly length: number }>;
  /** Complete uploads of random bytes (not audio). */
  readonly garbageUploads: readonly UploadedInput[];
  /** Complete uploads of real audio: the only inputs that may create a job. */
  readonly audioUploads: readonly UploadedInput[];
  /** A complete upload of another account. */
  readonly foreignUpload: UploadedInput;
  readonly succeededSplit: { readonly id: string; readonly stems: readonly string[]; readonly keyId: string };
  readonly signingKey: Buffer;
  /** A string no legitimate file name contains: any file named with it is an escape. */
  readonly nonce: string;
}

/** What a request expects, besides "no 5xx": returns a complaint, or undefined when satisfied. */
export type Oracle = (status: number | undefined) => string | undefined;

export type FuzzRequest =
  | {
      readonly transport: 'fetch';
      readonly label: string;
      readonly method: string;
      readonly path: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly body?: string | Uint8Array;
      readonly oracle?: Oracle;
      /** The attack this request stands for, when it must not succeed: counted in the report. */
      readonly threat?: string;
    }
  | {
      readonly transport: 'raw';
      readonly label: string;
      readonly head: string;
      readonly body: Buffer;
      readonly then: 'end' | 'destroy';
      readonly oracle?: Oracle;
      readonly threat?: string;
    };

// ---------------------------------------------------------------------------------------------
// Building blocks

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

const fakeUlid = fc.array(fc.integer({ min: 0, max: 31 }), { minLength: 26, maxLength: 26 }).map((digits) => digits.map((d) => CROCKFORD[d]).join(''));

function traversals(nonce: string): string[] {
  return [
    `../../../../../../tmp/stemsplit-escape-${nonce}`,
    `..\\..\\..\\..\\${nonce}.wav`,
    `%2e%2e%2f%2e%2e%2f${nonce}`,
    `....//....//${nonce}`,
    `/etc/passwd`,
    `/dev/null`,
    `.`,
    `..`,
    `~/${nonce}`,
    `C:\\Windows\\${nonce}`,
    `${nonce}\u0000.wav`,
    `file:///tmp/${nonce}`,
    `uploads/../../${nonce}`,
    `stemsplit.sqlite`,
    `\u202e${nonce}vaw.exe`,
  ];
}

/** Strings a careless server chokes on. */
function nastyString(nonce: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.string(),
    fc.string({ unit: 'grapheme', maxLength: 40 }),
    fc.string({ unit: 'binary', maxLength: 40 }),
    fc.constantFrom(...traversals(nonce)),
    fc.constantFrom('', ' ', '\u0000', '\n', '\r\n', '💥🎵', 'ｔｅｓｔ', '\ud800', 'null', 'undefined', '__proto__', 'constructor', '-1', '1e309'),
    fc.integer({ min: 255, max: 300 }).map((n) => 'é'.repeat(n)),
    fc.integer({ min: 2_000, max: 120_000 }).map((n) => 'A'.repeat(n)),
  );
}

/** Any JSON value, and the odd ones: wrong types for every field. */
function weirdValue(nonce: string): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    nastyString(nonce),
    fc.constantFrom(null, true, false, 0, -1, 1.5, 2 ** 53, -(2 ** 63), Number.MAX_VALUE, [], {}),
    fc.double(),
  );
}

/** A field that is valid, weird, or absent (undefined is dropped by JSON.stringify). */
function field<T>(valid: fc.Arbitrary<T>, nonce: string): fc.Arbitrary<unknown> {
  return fc.oneof({ weight: 3, arbitrary: valid }, { weight: 2, arbitrary: weirdValue(nonce) }, { weight: 1, arbitrary: fc.constant(undefined) });
}

/** A JSON body: the near-valid object, any JSON, or not JSON at all. */
function jsonBody(nearValid: fc.Arbitrary<Record<string, unknown>>, nonce: string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 6, arbitrary: nearValid.map((o) => JSON.stringify(o)) },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null') },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.string(),
        nearValid.map((o) => JSON.stringify(o).slice(0, -1)),
        fc.constantFrom('{', '{"input":', '[', 'null', '"str"', '{"a":1,}', "{'a':1}", '\u0000', '{"__proto__":{"x":1}}'),
        fc.integer({ min: 100, max: 50_000 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
        fc.integer({ min: 1, max: 200 }).map((n) => JSON.stringify({ filename: 'x'.repeat(n * 1024) })),
      ),
    },
  );
}

function jsonContentType(): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 5, arbitrary: fc.constant('application/json') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        undefined,
        'text/plain',
        'application/json; charset=utf-16',
        'multipart/form-data; boundary=x',
        'application/x-www-form-urlencoded',
        'audio/wav',
        '*/*',
        'application/json, text/html',
      ),
    },
    { weight: 1, arbitrary: headerValue() },
  );
}

/** Printable Latin-1 without leading or trailing spaces: what fetch sends verbatim. */
function headerValue(): fc.Arbitrary<string> {
  return fc
    .string({
      unit: fc
        .integer({ min: 0x21, max: 0xff })
        .filter((c) => c !== 0x7f && (c < 0x80 || c >= 0xa0))
        .map((c) => String.fromCharCode(c)),
      maxLength: 200,
    })
    .filter((s) => s.length > 0);
}

function authorization(t: FuzzTarget): fc.Arbitrary<{ header: string | undefined; valid: boolean }> {
  const valid = (header: string | undefined) => ({ header, valid: true });
  const invalid = (header: string | undefined) => ({ header, valid: false });
  return fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom(valid(`Bearer ${t.key}`), valid(`bearer  ${t.key}  `)) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.constantFrom(
          invalid(undefined),
          invalid(''),
          invalid('Bearer'),
          invalid(`Bearer ${t.revokedKey}`),
          invalid(`Basic ${t.key}`),
          invalid(`Bearer ${t.key}x`),
        ),
        fc.string({ unit: 'binary-ascii', minLength: 43, maxLength: 43 }).map((s) => invalid(`Bearer sk_stemsplit_${Buffer.from(s).toString('base64url')}`)),
        headerValue().map((h) => invalid(`Bearer ${h}`)),
      ),
    },
  );
}

function headersOf(entries: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(entries)) if (value !== undefined) out[name] = value;
  return out;
}

/** A URL the server might fetch, always refused before any socket opens (or loopback). */
function refusedUrl(nonce: string): fc.Arbitrary<string> {
  const host = fc.constantFrom(
    '127.0.0.1',
    '2130706433',
    '0x7f000001',
    '0177.0.0.1',
    '127.1',
    '0',
    '[::1]',
    '[::ffff:127.0.0.1]',
    '[::ffff:7f00:1]',
    '10.0.0.1',
    '169.254.169.254',
    '192.168.1.1',
    '172.16.0.1',
    '100.64.0.1',
    '[fd00::1]',
    '[fe80::1]',
    '[::]',
    'localhost',
    '0.0.0.0',
    '[64:ff9b::a00:1]',
    '[2002:7f00:1::]',
    '224.0.0.1',
    '255.255.255.255',
  );
  const scheme = fc.constantFrom('http', 'https', 'ftp', 'file', 'gopher', 'javascript', 'data', 'HTTP');
  const path = fc.oneof(
    fc.constant('/song.wav'),
    nastyString(nonce).map((s) => `/${uriSegment(s, 300)}`),
  );
  return fc.oneof(
    fc
      .tuple(scheme, fc.option(fc.constantFrom('user:pass@', 'a@')), host, fc.option(fc.integer({ min: 0, max: 70_000 })), path)
      .map(([s, creds, h, port, p]) => `${s}://${creds ?? ''}${h}${port === null ? '' : `:${port}`}${p}`),
    nastyString(nonce),
  );
}

// ---------------------------------------------------------------------------------------------
// Endpoints

const BAD_KEY = 'missing, malformed or revoked API key';
const FORGED_TOKEN = 'forged, missing or foreign upload token';

const notOk =
  (why: string): Oracle =>
  (status) =>
    status === 200 || status === 206 ? `${why}, yet answered ${status}` : undefined;
const needs401 =
  (why: string): Oracle =>
  (status) =>
    status !== undefined && status !== 401 ? `${why}: expected 401, got ${status}` : undefined;
const combine =
  (...oracles: Array<Oracle | undefined>): Oracle =>
  (status) =>
    oracles.map((o) => o?.(status)).find(Boolean);

export function reserveUpload(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const near = fc.record(
    {
      filename: field(fc.oneof(fc.constant('song.wav'), nastyString(t.nonce)), t.nonce),
      contentType: field(fc.constantFrom('audio/wav', 'audio/mpeg', 'audio/flac'), t.nonce),
      contentLength: field(fc.integer({ min: -10, max: 60_000_000 }), t.nonce),
      extra: fc.constant(undefined),
    },
    { requiredKeys: [] },
  ) as fc.Arbitrary<Record<string, unknown>>;
  return fc.tuple(jsonBody(near, t.nonce), jsonContentType(), authorization(t)).map(([body, contentType, auth]) => ({
    transport: 'fetch' as const,
    label: 'POST /v1/audio/uploads',
    method: 'POST',
    path: '/v1/audio/uploads',
    headers: headersOf({ 'content-type': contentType, authorization: auth.header }),
    body,
    oracle: auth.valid ? undefined : needs401('no valid API key'),
    ...(auth.valid ? {} : { threat: BAD_KEY }),
  }));
}

export function transferBytes(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const reservation = fc.integer({ min: 0, max: t.reservations.length - 1 }).map((i) => t.reservations[i] as FuzzTarget['reservations'][number]);
  const id = fc.oneof(
    { weight: 6, arbitrary: reservation.map((r) => ({ id: r.id, real: r })) },
    { weight: 1, arbitrary: fakeUlid.map((u) => ({ id: `upl_${u}`, real: undefined })) },
    { weight: 1, arbitrary: nastyString(t.nonce).map((s) => ({ id: uriSegment(s, 500), real: undefined })) },
  );
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.constant<'valid'>('valid') },
    { weight: 3, arbitrary: fc.constantFrom<'forged' | 'missing' | 'other' | 'empty'>('forged', 'missing', 'other', 'empty') },
  );
  const lengthDelta = fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 2, arbitrary: fc.integer({ min: -50, max: 50 }) });
  const transport = fc.constantFrom<'fetch' | 'raw-lying-length' | 'raw-cut' | 'raw-chunked' | 'raw-bad-length'>(
    'fetch',
    'fetch',
    'raw-lying-length',
    'raw-cut',
    'raw-chunked',
    'raw-bad-length',
  );
  return fc
    .tuple(id, token, lengthDelta, fc.constantFrom('POST', 'PUT'), fc.option(headerValue()), transport, fc.integer({ min: 0, max: 2 ** 31 }))
    .map(([target, tokenKind, delta, method, contentType, how, seed]) => {
      const real = target.real;
      const others = t.reservations.filter((r) => r !== real);
      const tokenValue =
        tokenKind === 'valid'
          ? (real?.token ?? randomBytes(32).toString('base64url'))
          : tokenKind === 'forged'
            ? randomBytes(32).toString('base64url')
            : tokenKind === 'other'
              ? (others[seed % others.length]?.token ?? 'x')
              : tokenKind === 'empty'
                ? ''
                : undefined;
      const length = Math.max(0, (real?.length ?? 64) + delta);
      const body = randomBytes(length);
      const path = `/v1/uploads/${target.id}`;
      const forged = real === undefined || tokenKind !== 'valid';
      const oracle = forged ? notOk('an upload with a forged, missing or foreign token') : undefined;
      if (how === 'fetch') {
        return {
          transport: 'fetch' as const,
          label: `${method} /v1/uploads/{id}`,
          method,
          path,
          headers: headersOf({ 'x-stemsplit-upload-token': tokenValue, 'content-type': contentType ?? undefined }),
          body,
          oracle,
          ...(forged ? { threat: FORGED_TOKEN } : {}),
        };
      }
      const tokenLine = tokenValue === undefined ? [] : [`X-Stemsplit-Upload-Token: ${tokenValue}`];
      const cut = seed % Math.max(1, length);
      const variants = {
        'raw-lying-length': { lines: [`Content-Length: ${real?.length ?? length}`], bytes: body.subarray(0, cut), then: 'end' as const },
        'raw-cut': { lines: [`Content-Length: ${length}`], bytes: body.subarray(0, cut), then: 'destroy' as const },
        'raw-chunked': {
          lines: ['Transfer-Encoding: chunked'],
          bytes: Buffer.from(`${length.toString(16)}\r\n${body.toString('latin1')}\r\n0\r\n\r\n`, 'latin1'),
          then: 'end' as const,
        },
        'raw-bad-length': {
          lines: [
            [`Content-Length: -1`, `Content-Length: abc`, `Content-Length: 1\r\nContent-Length: 2`, `Content-Length: 99999999999999999999`][seed % 4] as string,
          ],
          bytes: body,
          then: 'end' as const,
        },
      }[how];
      return {
        transport: 'raw' as const,
        label: `${method} /v1/uploads/{id} (${how})`,
        head: [`${method} ${path} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...tokenLine, ...variants.lines].join('\r\n'),
        body: variants.bytes,
        then: variants.then,
        // A cut or lying transfer must never be accepted, whatever the token.
        oracle: how === 'raw-chunked' ? oracle : notOk(`a transfer that is cut off or lies about its length (${how})`),
        ...(how !== 'raw-chunked' ? { threat: 'upload cut off or lying about its length' } : forged ? { threat: FORGED_TOKEN } : {}),
      };
    });
}

export function createSplit(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const mutate = (u: UploadedInput) =>
    fc.record({
      type: field(fc.constant('uploaded_file'), t.nonce),
      uploadId: fc.oneof({ weight: 4, arbitrary: fc.constant(u.uploadId) }, { weight: 1, arbitrary: weirdValue(t.nonce) }),
      fileUrl: fc.oneof(
        { weight: 4, arbitrary: fc.constant(u.fileUrl) },
        { weight: 1, arbitrary: fc.constantFrom(u.fileUrl.replace('127.0.0.1', 'localhost'), `${u.fileUrl}/../../x`, 'http://evil.invalid/v1/uploads/x') },
        { weight: 1, arbitrary: weirdValue(t.nonce) },
      ),
      storageKey: fc.oneof(
        { weight: 4, arbitrary: fc.constant(u.storageKey) },
        { weight: 1, arbitrary: fc.constantFrom(`${u.storageKey}/../../stemsplit.sqlite`, `../${u.storageKey}`, `/${u.storageKey}`) },
        { weight: 1, arbitrary: weirdValue(t.nonce) },
      ),
    });
  const pick = (list: readonly UploadedInput[]) => fc.integer({ min: 0, max: list.length - 1 }).map((i) => list[i] as UploadedInput);
  const input = fc.oneof(
    {
      weight: 2,
      arbitrary: pick(t.audioUploads)
        .chain(mutate)
        .map((v) => ({ value: v as unknown, threat: undefined })),
    },
    { weight: 1, arbitrary: pick(t.audioUploads).map((v) => ({ value: v as unknown, threat: undefined })) },
    {
      weight: 3,
      arbitrary: pick(t.garbageUploads)
        .chain(mutate)
        .map((v) => ({ value: v as unknown, threat: 'an upload that is not audio' })),
    },
    { weight: 1, arbitrary: mutate(t.foreignUpload).map((v) => ({ value: v as unknown, threat: "another account's upload" })) },
    {
      weight: 3,
      arbitrary: fc
        .record({ type: field(fc.constant('direct_url'), t.nonce), url: refusedUrl(t.nonce) })
        .map((v) => ({ value: v as unknown, threat: 'direct_url to a private, loopback or non-http target' })),
    },
    { weight: 1, arbitrary: weirdValue(t.nonce).map((v) => ({ value: v, threat: 'malformed input' })) },
  );
  const request = fc.tuple(
    input,
    field(fc.constantFrom('4s', '6s'), t.nonce),
    field(fc.constant('mp3'), t.nonce),
    fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: refusedUrl(t.nonce) }),
  );
  const idempotencyKey = fc.oneof(
    { weight: 3, arbitrary: fc.constant(undefined) },
    { weight: 1, arbitrary: headerValue() },
    { weight: 1, arbitrary: fc.constantFrom('k'.repeat(129), 'fixed-key', 'é') },
  );
  return fc
    .tuple(
      request,
      jsonContentType(),
      authorization(t),
      idempotencyKey,
      fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
    )
    .map(([[src, stemModel, outputFormat, webhookUrl], contentType, auth, idemKey, garble]) => {
      const body = JSON.stringify({ input: src.value, stemModel, outputFormat, ...(webhookUrl === null ? {} : { webhookUrl }) });
      const threat = !auth.valid ? BAD_KEY : (src.threat ?? (webhookUrl === null ? undefined : 'webhookUrl to a private, loopback or non-http target'));
      return {
        transport: 'fetch' as const,
        label: 'POST /v1/audio/splits',
        method: 'POST',
        path: '/v1/audio/splits',
        headers: headersOf({ 'content-type': contentType, authorization: auth.header, 'idempotency-key': idemKey }),
        body: garble ? body.slice(0, body.length >> 1) : body,
        oracle: combine(auth.valid ? undefined : needs401('no valid API key'), threat === undefined ? undefined : notOk(`a job from ${threat}`)),
        ...(threat === undefined ? {} : { threat }),
      };
    });
}

export function getSplit(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const id = fc.oneof(
    fc.constant(t.succeededSplit.id),
    fakeUlid.map((u) => `split_${u}`),
    nastyString(t.nonce).map((s) => uriSegment(s, 2000)),
    fc.constantFrom('..%2F..%2Fstemsplit.sqlite', '%00', '..', '.', 'split_', `split_${t.succeededSplit.id}`),
  );
  return fc.tuple(id, authorization(t)).map(([splitId, auth]) => ({
    transport: 'fetch' as const,
    label: 'GET /v1/audio/splits/{id}',
    method: 'GET',
    path: `/v1/audio/splits/${splitId}`,
    headers: headersOf({ authorization: auth.header }),
    oracle: auth.valid ? (splitId === t.succeededSplit.id ? undefined : notOk('an unknown job id')) : needs401('no valid API key'),
    ...(!auth.valid ? { threat: BAD_KEY } : splitId === t.succeededSplit.id ? {} : { threat: 'unknown, malformed or traversing job id' }),
  }));
}

export function listSplits(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const param = fc.oneof(
    fc.constant(undefined),
    fc.integer({ min: -5, max: 200 }).map(String),
    nastyString(t.nonce).map((s) => s.slice(0, 3000)),
  );
  const cursor = fc.oneof(
    fc.constant(undefined),
    fc.constant(t.succeededSplit.id),
    fakeUlid.map((u) => `split_${u}`),
    nastyString(t.nonce).map((s) => s.slice(0, 3000)),
  );
  return fc.tuple(param, cursor, authorization(t)).map(([limit, after, auth]) => {
    const query = new URLSearchParams();
    if (limit !== undefined) query.set('limit', limit);
    if (after !== undefined) query.set('cursor', after);
    return {
      transport: 'fetch' as const,
      label: 'GET /v1/audio/splits',
      method: 'GET',
      path: `/v1/audio/splits?${query.toString()}`,
      headers: headersOf({ authorization: auth.header }),
      oracle: auth.valid ? undefined : needs401('no valid API key'),
      ...(auth.valid ? {} : { threat: BAD_KEY }),
    };
  });
}

export function getCredits(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  return authorization(t).map((auth) => ({
    transport: 'fetch' as const,
    label: 'GET /v1/credits',
    method: 'GET',
    path: '/v1/credits',
    headers: headersOf({ authorization: auth.header }),
    oracle: auth.valid ? (status) => (status !== 200 ? `credits with a valid key answered ${status}` : undefined) : needs401('no valid API key'),
    ...(auth.valid ? {} : { threat: BAD_KEY }),
  }));
}

/** Signed stem URLs: genuine, expired but genuinely signed, forged, tampered, for other stems. */
export function downloadStem(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const sign = (split: string, stem: string, expires: number) =>
    createHmac('sha256', t.signingKey).update(`stem\n${split}\n${stem}\n${expires}\n${t.succeededSplit.keyId}`).digest('hex');
  const splitId = fc.oneof(
    { weight: 5, arbitrary: fc.constant(t.succeededSplit.id) },
    { weight: 1, arbitrary: fakeUlid.map((u) => `split_${u}`) },
    { weight: 1, arbitrary: nastyString(t.nonce).map((s) => uriSegment(s, 300)) },
  );
  const stem = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...t.succeededSplit.stems) },
    { weight: 1, arbitrary: fc.constantFrom('guitar', 'piano', 'Vocals', '..%2F..%2Fstemsplit.sqlite', '..', '%2e%2e', 'vocals.mp3') },
    { weight: 1, arbitrary: nastyString(t.nonce).map((s) => uriSegment(s, 300)) },
  );
  const ext = fc.oneof({ weight: 6, arbitrary: fc.constant('.mp3') }, { weight: 1, arbitrary: fc.constantFrom('', '.MP3', '.mp3.mp3', '.wav', '.mp3%00') });
  const expiry = fc.oneof(
    { weight: 3, arbitrary: fc.integer({ min: 60, max: 86_400 }).map((s) => ({ offset: s })) },
    { weight: 2, arbitrary: fc.integer({ min: -86_400 * 30, max: -1 }).map((s) => ({ offset: s })) },
    { weight: 1, arbitrary: nastyString(t.nonce).map((raw) => ({ raw: raw.slice(0, 100) })) },
  );
  const signature = fc.constantFrom<'genuine' | 'random' | 'upper' | 'truncated' | 'missing' | 'other-stem' | 'other-expiry'>(
    'genuine',
    'genuine',
    'genuine',
    'random',
    'upper',
    'truncated',
    'missing',
    'other-stem',
    'other-expiry',
  );
  return fc.tuple(splitId, stem, ext, expiry, signature, fc.option(headerValue())).map(([split, stemName, extension, exp, sigKind, range]) => {
    const nowS = Math.floor(Date.now() / 1000);
    const expires = 'raw' in exp ? exp.raw : String(nowS + exp.offset);
    const genuine = /^\d+$/.test(expires) ? sign(decodeURIComponentSafe(split), decodeURIComponentSafe(stemName), Number(expires)) : '0'.repeat(64);
    const sig = {
      genuine,
      random: randomBytes(32).toString('hex'),
      upper: genuine.toUpperCase(),
      truncated: genuine.slice(0, 63),
      missing: undefined,
      'other-stem': sign(split, stemName === 'drums' ? 'bass' : 'drums', Number(expires)),
      'other-expiry': sign(split, stemName, Number(expires) + 1),
    }[sigKind];
    const query = new URLSearchParams({ expires, keyId: t.succeededSplit.keyId });
    if (sig !== undefined) query.set('signature', sig);
    const valid = sigKind === 'genuine' && 'offset' in exp && exp.offset > 0;
    const exists = split === t.succeededSplit.id && t.succeededSplit.stems.includes(stemName) && extension === '.mp3';
    const oracle: Oracle = (status) => {
      if ((status === 200 || status === 206) && !(valid && exists)) return `a forged or expired stem URL (${sigKind}) answered ${status}`;
      if (valid && exists && status !== 200 && status !== 206) return `a genuine stem URL answered ${status}`;
      return undefined;
    };
    return {
      transport: 'fetch' as const,
      label: 'GET /v1/files/{id}/{stem}.mp3',
      method: 'GET',
      path: `/v1/files/${split}/${stemName}${extension}?${query.toString()}`,
      headers: headersOf({ range: range === null ? undefined : `bytes=${range}` }),
      oracle,
      ...(valid && exists
        ? {}
        : { threat: sigKind !== 'genuine' ? 'forged stem URL' : !valid ? 'expired stem URL (genuinely signed)' : 'signed URL for a stem that does not exist' }),
    };
  });
}

/** Anything at all: any method, any path (known ones mangled), any headers and body, or raw garbage. */
export function anything(t: FuzzTarget): fc.Arbitrary<FuzzRequest> {
  const known = [
    '/v1/health',
    '/v1/openapi.json',
    '/v1/audio/uploads',
    '/v1/audio/splits',
    '/v1/credits',
    '/v1/files',
    '/v1/uploads',
    '/v2/audio/splits',
    '/',
    '//v1//credits',
  ];
  const path = fc.oneof(
    fc.constantFrom(...known),
    fc.tuple(fc.constantFrom(...known), nastyString(t.nonce)).map(([p, s]) => `${p}/${uriSegment(s, 500)}`),
    fc.constantFrom(...traversals(t.nonce)).map((s) => `/v1/${s.replace(/[\u0000-\u001f\s]/g, '')}`),
  );
  // fetch refuses to send TRACE, TRACK and CONNECT: those go raw.
  const method = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD', 'PROPFIND', 'FOO');
  const rawMethod = fc.constantFrom('GET', 'POST', 'TRACE', 'TRACK', 'CONNECT', 'G\u00e9T', '');
  const viaFetch = fc
    .tuple(method, path, jsonContentType(), authorization(t), fc.option(fc.oneof(fc.string(), fc.uint8Array({ maxLength: 4096 }))))
    .map(([m, p, ct, auth, body]) => ({
      transport: 'fetch' as const,
      label: 'any method and path',
      method: m,
      path: p,
      headers: headersOf({ 'content-type': ct, authorization: auth.header }),
      ...(body === null || m === 'GET' || m === 'HEAD' ? {} : { body }),
    }));
  const raw = fc.oneof(
    fc.uint8Array({ minLength: 1, maxLength: 2048 }).map((bytes) => ({ head: '', body: Buffer.from(bytes) })),
    fc
      .tuple(rawMethod, nastyString(t.nonce), fc.array(fc.tuple(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 100 })), { maxLength: 5 }))
      .map(([m, p, hs]) => ({
        head: [`${m} /v1/${p.slice(0, 2000)} HTTP/1.1`, 'Host: 127.0.0.1', 'Connection: close', ...hs.map(([n, v]) => `${n}: ${v}`)].join('\r\n'),
        body: Buffer.alloc(0),
      })),
    fc
      .integer({ min: 17_000, max: 80_000 })
      .map((n) => ({ head: `GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nX-Big: ${'b'.repeat(n)}`, body: Buffer.alloc(0) })),
  );
  return fc.oneof(
    { weight: 4, arbitrary: viaFetch },
    {
      weight: 1,
      arbitrary: raw.map((r) => ({ transport: 'raw' as const, label: 'raw bytes', head: r.head, body: Buffer.from(r.body), then: 'end' as const })),
    },
  );
}

/** `text` cut to `max` and percent-encoded; lone surrogates (which URLs cannot carry) become U+FFFD. */
function uriSegment(text: string, max: number): string {
  return encodeURIComponent(text.slice(0, max).replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));
}

function decodeURIComponentSafe(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
