/** A file's SHA-256, streamed in 1 MiB reads: what a pull checks a download against and what keys a converted model. */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

export async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 })) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
