/**
 * A copy of a real checkpoint with one weight of the wrong shape and everything else intact: its
 * zip, its pickle and every storage sound, so only a check of the shapes against the config can
 * refuse it. The first dimension of one tensor (a matrix-like one by its place, or any by its
 * name; the dimension at least 2) is made one smaller in `data.pkl`, in place: the view then still
 * lies inside its storage. torch stores `data.pkl` uncompressed, and stemsplit's zip reader does not check
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
const NO_ARGS = new Set([
  0x7d, 0x5d, 0x29, 0x28, 0x74, 0x85, 0x86, 0x87, 0x51, 0x52, 0x73, 0x75, 0x61, 0x65, 0x4e, 0x88, 0x89, 0x62, 0x94, 0x81, 0x30, 0x32, 0x2e,
]);

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
    else if (code === 0x58 || code === 0x42 || code === 0x54)
      next += 4 + bytes.readUInt32LE(at + 1); // BINUNICODE, BINBYTES, BINSTRING
    else if (code === 0x8c || code === 0x43 || code === 0x55 || code === 0x8a)
      next += 1 + (bytes[at + 1] as number); // SHORT_BINUNICODE, SHORT_BINBYTES, SHORT_BINSTRING, LONG1
    else if (code === 0x63)
      next = bytes.indexOf(0x0a, bytes.indexOf(0x0a, next) + 1) + 1; // GLOBAL: two lines
    else if (!NO_ARGS.has(code)) throw new Error(`opcode 0x${code.toString(16)} at ${at} is not one torch writes`);
    ops.push({ code, at, next });
    if (code === 0x2e) break;
    at = next;
  }
  return ops;
}

const isInt = (op: Op | undefined): boolean => op !== undefined && (op.code === 0x4b || op.code === 0x4d || op.code === 0x4a);

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

/** A size the pickle writes in one or two bytes (BININT1, BININT2), at least 2: one smaller still fits in place. */
interface Dimension {
  readonly op: Op;
  readonly value: number;
}

function dimensionOf(file: Buffer, op: Op | undefined): Dimension | undefined {
  if (op?.code === 0x4b && (file[op.at + 1] as number) >= 2) return { op, value: file[op.at + 1] as number };
  if (op?.code === 0x4d && file.readUInt16LE(op.at + 1) >= 2) return { op, value: file.readUInt16LE(op.at + 1) };
  return undefined;
}

/** A pickled string's text (SHORT_BINUNICODE or BINUNICODE), or undefined for any other opcode. */
function textOf(file: Buffer, op: Op): string | undefined {
  if (op.code === 0x8c) return file.subarray(op.at + 2, op.next).toString('utf8');
  if (op.code === 0x58) return file.subarray(op.at + 5, op.next).toString('utf8');
  return undefined;
}

/**
 * Writes `source` to `target` with the first dimension of one tensor one smaller: the tensor named
 * `which` in the state, or the `which`-th matrix-like one in the pickle's order (0 the first; −1
 * the last, −2 the one before). Returns that dimension's old value (the caller finds the tensor by
 * comparing shapes).
 */
export function writeMisshaped(source: string, target: string, which: number | string = 0): number {
  const file = readFileSync(source);
  const { start, end } = pickleRange(file);
  const ops = opcodes(file, start, end);
  const heads: Dimension[] = [];
  // A state's key comes just before its tensor: the first BINPERSID after the name is that tensor's storage.
  let named = typeof which === 'number';
  for (const [index, op] of ops.entries()) {
    if (!named && textOf(file, op) === which) named = true;
    // _rebuild_tensor_v2(storage, offset, size, stride, …): BINPERSID, the offset, then the size tuple.
    if (!named || op.code !== 0x51 || !isInt(ops[index + 1])) continue;
    let first = index + 2;
    if (ops[first]?.code === 0x28) first++; // MARK … TUPLE for four or more dimensions
    let last = first;
    while (isInt(ops[last])) last++;
    const head = dimensionOf(file, ops[first]);
    if (typeof which === 'string') {
      if (head === undefined) throw new Error(`${source}: ${which}'s first dimension cannot be made smaller in place`);
      heads.push(head);
      break;
    }
    if (last - first >= 2 && head !== undefined) heads.push(head);
  }
  const head = typeof which === 'string' ? heads[0] : heads.at(which);
  if (head === undefined) throw new Error(`${source} has no tensor ${typeof which === 'string' ? which : `number ${which}`} to damage`);
  if (head.op.code === 0x4b) file[head.op.at + 1] = head.value - 1;
  else file.writeUInt16LE(head.value - 1, head.op.at + 1);
  writeFileSync(target, file);
  return head.value;
}
