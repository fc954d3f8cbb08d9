/**
 * A copy of a real checkpoint with one weight of the wrong shape and everything else intact: its
 * zip, its pickle and every storage sound, so only a check of the shapes against the config can
 * refuse it. The first dimension of one matrix-like tensor (two or more dimensions, the first
 * at least 2) is made one smaller in `data.pkl`, in place: the view then still lies inside its
 * storage. torch stores `data.pkl` uncompressed, and stemsplit's zip reader does not check
 * CRC-32s, so the patched byte is all that changes.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** Argument bytes after each pickle opcode (protocol ≤ 4) that torch files use; -1: a length-prefixed or line-ended argument. */
const FIXED_ARGS: Readonly<Record<number, number>> = {
  0x80: 1, // PROTO
  0x95: 8, // FRAME
  0x71: 1, // BINPUT
  0x72: 4, // LONG_BINPUT
  0x68: 1, // BINGET
  0x6a: 4, // LONG_BINGET
  0x4b: 1, // BININT1
  0x4d: 2, // BININT2
  0x4a: 4, // BININT
  0x47: 8, // BINFLOAT
};
const NO_ARGS = new Set([0x7d, 0x5d, 0x29, 0x28, 0x74, 0x85, 0x86, 0x87, 0x51, 0x52, 0x73, 0x75, 0x61, 0x65, 0x4e, 0x88, 0x89, 0x62, 0x94, 0x81, 0x30, 0x32, 0x2e]);

interface Op {
  readonly code: number;
  readonly at: number;
  readonly next: number;
}

/** The opcodes of a pickle, each with where it and its argument lie. */
function opcodes(bytes: Buffer, start: number, end: number): Op[] {
  const ops: Op[] = [];
  let at = start;
  while (at < end) {
    const code = bytes[at] as number;
    let next = at + 1;
    if (code in FIXED_ARGS) next += FIXED_ARGS[code] as number;
    else if (code === 0x58 || code === 0x42 || code === 0x54) next += 4 + bytes.readUInt32LE(at + 1); // BINUNICODE, BINBYTES, BINSTRING
    else if (code === 0x8c || code === 0x43 || code === 0x55 || code === 0x8a) next += 1 + (bytes[at + 1] as number); // SHORT_BINUNICODE, SHORT_BINBYTES, SHORT_BINSTRING, LONG1
    else if (code === 0x63) next = bytes.indexOf(0x0a, bytes.indexOf(0x0a, next) + 1) + 1; // GLOBAL: two lines
    else if (!NO_ARGS.has(code)) throw new Error(`opcode 0x${code.toString(16)} at ${at} is not one torch writes`);
    ops.push({ code, at, next });
    if (code === 0x2e) break;
    at = next;
  }
  return ops;
}

const isInt = (op: Op | undefined) => op !== undefined && (op.code === 0x4b || op.code === 0x4d || op.code === 0x4a);

/** Where `data.pkl`'s bytes lie in a torch zip: its central directory entry gives the size and the local header (whose sizes torch leaves to a data descriptor). */
function pickleRange(file: Buffer): { start: number; end: number } {
  for (let at = file.indexOf('PK\x01\x02'); at >= 0; at = file.indexOf('PK\x01\x02', at + 4)) {
    const nameLength = file.readUInt16LE(at + 28);
    const name = file.subarray(at + 46, at + 46 + nameLength).toString('utf8');
    if (!name.endsWith('data.pkl')) continue;
    if (file.readUInt16LE(at + 10) !== 0) throw new Error('data.pkl is compressed');
    const local = file.readUInt32LE(at + 42);
    const start = local + 30 + file.readUInt16LE(local + 26) + file.readUInt16LE(local + 28);
    return { start, end: start + file.readUInt32LE(at + 20) };
  }
  throw new Error('no data.pkl');
}

/**
 * Writes `source` to `target` with the first dimension of one matrix-like tensor one smaller: the
 * `which`-th in the pickle's order (0 the first; −1 the last, −2 the one before). Returns that
 * dimension's old value (the caller finds the tensor by comparing shapes).
 */
export function writeMisshaped(source: string, target: string, which = 0): number {
  const file = readFileSync(source);
  const { start, end } = pickleRange(file);
  const ops = opcodes(file, start, end);
  const heads: Op[] = [];
  for (const [index, op] of ops.entries()) {
    // _rebuild_tensor_v2(storage, offset, size, stride, …): BINPERSID, the offset, then the size tuple.
    if (op.code !== 0x51 || !isInt(ops[index + 1])) continue;
    let first = index + 2;
    if (ops[first]?.code === 0x28) first++; // MARK … TUPLE for four or more dimensions
    let last = first;
    while (isInt(ops[last])) last++;
    const dims = last - first;
    const head = ops[first];
    if (dims >= 2 && head !== undefined && head.code === 0x4b && (file[head.at + 1] as number) >= 2) heads.push(head);
  }
  const head = heads.at(which);
  if (head === undefined) throw new Error(`${source} has no matrix-like tensor number ${which} to damage`);
  const old = file[head.at + 1] as number;
  file[head.at + 1] = old - 1;
  writeFileSync(target, file);
  return old;
}
