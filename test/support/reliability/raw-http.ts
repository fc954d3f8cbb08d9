/**
 * HTTP/1.1 written by hand on a TCP socket, for what fetch refuses to send: a Content-Length that
 * lies, a body cut off mid-stream, bytes in headers no client library allows.
 */
import { connect } from 'node:net';

export interface RawRequest {
  readonly port: number;
  /** Request line and headers, without the blank line that ends them. */
  readonly head: string;
  readonly body?: Buffer;
  /**
   * After writing: `end` half-closes (a client that stopped sending), `destroy` drops the
   * connection at once (a client that died), `wait` keeps sending nothing and waits.
   */
  readonly then: 'end' | 'destroy' | 'wait';
  /** Runs once the bytes are written, before `then` (to look at the server mid-transfer). */
  readonly midway?: () => Promise<void>;
  readonly timeoutMs?: number;
}

export interface RawResult {
  /** The status code, when an answer came back. */
  readonly status: number | undefined;
  readonly response: string;
  readonly timedOut: boolean;
}

export function rawRequest(request: RawRequest): Promise<RawResult> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: request.port });
    const chunks: Buffer[] = [];
    let settled = false;
    const finish = (timedOut: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      const response = Buffer.concat(chunks).toString('latin1');
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(response);
      resolve({ status: match ? Number(match[1]) : undefined, response, timedOut });
    };
    const timer = setTimeout(() => finish(true), request.timeoutMs ?? 3000);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => finish(false));
    socket.on('close', () => finish(false));
    socket.on('connect', () => {
      socket.write(Buffer.concat([Buffer.from(`${request.head}\r\n\r\n`, 'latin1'), request.body ?? Buffer.alloc(0)]), () => {
        // Once the bytes are on their way: stop sending, or vanish.
        void (request.midway?.() ?? Promise.resolve()).then(() => {
          if (request.then === 'end') socket.end();
          else if (request.then === 'destroy') finish(false);
        });
      });
    });
  });
}
