/**
 * Correcting the end padding in the LAME tag of an MP3 we just encoded.
 *
 * Decoders learn from the LAME tag (inside the first, silent "Info" frame) how many
 * priming samples to drop at the start (delay) and how many filler samples at the end
 * (padding), and so return exactly the encoded length. Some ffmpeg builds (the static 4.1
 * in @ffmpeg-installer among them) write a padding 1–46 samples too small when the length
 * is just over a multiple of 1152, so stems would decode up to 46 samples long. We know
 * the true length, so we recompute the padding from the tag's frame count and delay and
 * rewrite it together with the tag's CRC. A file whose tag we do not recognise is left alone.
 */
import { open } from 'node:fs/promises';

/** Enough to hold an ID3v2 tag written by ffmpeg plus the first frame. */
const HEAD_BYTES = 64 * 1024;

export async function fixMp3Padding(file: string, length: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    const head = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await handle.read(head, 0, HEAD_BYTES, 0);
    const patch = paddingPatch(head.subarray(0, bytesRead), length);
    if (patch !== undefined) await handle.write(patch.bytes, 0, patch.bytes.length, patch.position);
  } finally {
    await handle.close();
  }
}

interface Patch {
  readonly position: number;
  readonly bytes: Buffer;
}

/** The rewritten tag bytes (frame start to CRC inclusive) and where they go, or undefined to leave the file. */
export function paddingPatch(head: Buffer, length: number): Patch | undefined {
  const frame = firstFrameOffset(head);
  if (frame === undefined || frame + 4 > head.length) return undefined;
  const header = head.readUInt32BE(frame);
  if (header >>> 21 !== 0x7ff || ((header >>> 17) & 3) !== 1) return undefined; // no frame sync, or not layer III
  const mpeg1 = ((header >> 19) & 3) === 3;
  const mono = ((header >> 6) & 3) === 3;
  const sideInfo = mpeg1 ? (mono ? 17 : 32) : mono ? 9 : 17;
  const samplesPerFrame = mpeg1 ? 1152 : 576;
  const xing = frame + 4 + sideInfo;
  const lame = xing + 120;
  const crcAt = lame + 34;
  if (crcAt + 2 > head.length) return undefined;
  const magic = head.toString('latin1', xing, xing + 4);
  const flags = head.readUInt32BE(xing + 4);
  // The 120-byte Xing layout holds only when frames, bytes, TOC and quality are all present.
  if ((magic !== 'Info' && magic !== 'Xing') || (flags & 0xf) !== 0xf) return undefined;
  const frames = head.readUInt32BE(xing + 8);
  const delay = (head.readUIntBE(lame + 21, 3) >> 12) & 0xfff;
  const padding = frames * samplesPerFrame - delay - length;
  if (padding < 0 || padding > 0xfff) return undefined;

  const bytes = Buffer.from(head.subarray(frame, crcAt + 2));
  const at = lame + 21 - frame;
  bytes.writeUIntBE((delay << 12) | padding, at, 3);
  bytes.writeUInt16BE(crc16(bytes.subarray(0, crcAt - frame)), crcAt - frame);
  return { position: frame, bytes };
}

/** Where the first MPEG frame starts: after an ID3v2 tag if there is one. */
function firstFrameOffset(head: Buffer): number | undefined {
  if (head.length < 10 || head.toString('latin1', 0, 3) !== 'ID3') return 0;
  // ID3v2 sizes are "syncsafe": 7 bits per byte.
  const size = ((head[6] ?? 0) << 21) | ((head[7] ?? 0) << 14) | ((head[8] ?? 0) << 7) | (head[9] ?? 0);
  const hasFooter = ((head[5] ?? 0) & 0x10) !== 0;
  return 10 + size + (hasFooter ? 10 : 0);
}

/** CRC-16/ARC (reflected polynomial 0xA001, initial 0), the checksum of the LAME tag. */
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const byte of bytes) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc;
}
