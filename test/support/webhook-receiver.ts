/**
 * The webhook receiver on loopback, for tests and the reliability scripts alike: records every
 * request, answers from a script, and checks each delivery's signature as docs/api.md tells a
 * receiver to.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  receivedAtMs: number;
  /** Whether its signature verified with the receiver's secret, when it was given one (checked on arrival, while the timestamp is fresh). */
  signatureValid?: boolean;
}

/** The receiver's side of docs/api.md: HMAC-SHA256 of "<t>.<raw body>" and a fresh timestamp. */
export function verifySignature(header: string, body: string, secret: string, toleranceSeconds = 300): boolean {
  const match = /^t=(\d{1,12}),v1=([0-9a-f]{64})$/.exec(header);
  if (!match?.[1] || !match[2]) return false;
  const timestamp = Number(match[1]);
  if (Math.abs(Date.now() / 1000 - timestamp) > toleranceSeconds) return false;
  const expected = createHmac('sha256', secret).update(`${timestamp}.${body}`).digest();
  return timingSafeEqual(Buffer.from(match[2], 'hex'), expected);
}

/** Answers with the next status in `script`, then 200; with `secret`, verifies each delivery's signature. */
export async function receiver(script: number[] = [], secret?: string): Promise<{ url: string; received: Received[]; server: Server }> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const delivery: Received = { headers: req.headers, body, receivedAtMs: Date.now() };
      if (secret !== undefined) delivery.signatureValid = verifySignature(String(req.headers['stemsplit-signature'] ?? ''), body, secret);
      received.push(delivery);
      res.statusCode = script.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/stemsplit`, received, server };
}
