/**
 * A pickle's bytes, read as its opcodes' operands (pickle.ts): every length is checked against the
 * bytes left before anything is read or allocated, integers are bounded, and each refusal is the
 * caller's `malformed` error (which names the checkpoint).
 */
import type { StemsplitError } from '../errors.js';

/**
 * The longest integer a checkpoint may hold, in bytes (LONG1/LONG4) and decimal digits (INT/LONG):
 * far beyond any real one; Python itself refuses to parse more than 4300 digits by default.
 */
const MAX_INT_BYTES = 1024;
const MAX_INT_DIGITS = 4300;

export class PickleInput {
  private readonly view: DataView;
  private readonly text = new TextDecoder('utf-8');
  private readonly latin1 = new TextDecoder('latin1');
  private pos = 0;

  constructor(
    private readonly data: Uint8Array,
    private readonly malformed: (detail: string) => StemsplitError,
  ) {
    this.view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  }

  /** The offset of the next byte to read. */
  get position(): number {
    return this.pos;
  }

  /** Passes over an operand nothing reads (PROTO's version, FRAME's length); a read past the end is refused then. */
  skip(n: number): void {
    this.pos += n;
  }

  byte(): number {
    if (this.pos >= this.data.length) throw this.malformed('it ends before STOP (cut off?)');
    return this.data[this.pos++] as number;
  }

  int32(): number {
    return this.view.getInt32(this.advance(4), true);
  }

  uint16(): number {
    return this.view.getUint16(this.advance(2), true);
  }

  uint32(): number {
    return this.view.getUint32(this.advance(4), true);
  }

  /** BINFLOAT's operand: big-endian, unlike the others. */
  float64(): number {
    return this.view.getFloat64(this.advance(8), false);
  }

  u64(): number {
    return Number(this.view.getBigUint64(this.advance(8), true));
  }

  bytes(n: number): Uint8Array {
    const at = this.advance(n);
    return this.data.slice(at, at + n);
  }

  utf8(n: number): string {
    const at = this.advance(n);
    return this.text.decode(this.data.subarray(at, at + n));
  }

  latin(n: number): string {
    const at = this.advance(n);
    return this.latin1.decode(this.data.subarray(at, at + n));
  }

  line(): string {
    const end = this.data.indexOf(0x0a, this.pos);
    if (end < 0) throw this.malformed('unterminated text argument');
    const text = this.latin1.decode(this.data.subarray(this.pos, end));
    this.pos = end + 1;
    return text;
  }

  rawUnicodeLine(): string {
    return this.line().replace(/\\u([0-9a-fA-F]{4})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
  }

  textInt(text: string): number | bigint | boolean {
    if (text === '00') return false;
    if (text === '01') return true;
    if (text.length > MAX_INT_DIGITS) throw this.malformed(`an integer of ${text.length} digits (at most ${MAX_INT_DIGITS})`);
    if (!/^\s*[-+]?\d+\s*$/.test(text)) throw this.malformed(`"${text.slice(0, 20)}" is not an integer`);
    return narrow(BigInt(text.trim()));
  }

  /** Little-endian two's complement integer of n bytes (LONG1/LONG4), decoded in linear time. */
  longBytes(n: number): number | bigint {
    if (n > MAX_INT_BYTES) throw this.malformed(`an integer of ${n} bytes (at most ${MAX_INT_BYTES})`);
    const at = this.advance(n);
    if (n === 0) return 0;
    const bytes = this.data.subarray(at, at + n);
    const value = BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
    return narrow(((bytes[n - 1] as number) & 0x80) !== 0 ? value - (1n << BigInt(8 * n)) : value);
  }

  /** Moves past `n` bytes an opcode claims: never backwards, never past the end. */
  private advance(n: number): number {
    const at = this.pos;
    if (!Number.isSafeInteger(n) || n < 0) throw this.malformed(`an opcode at byte ${at} claims a length of ${n}`);
    if (n > this.data.length - at) throw this.malformed(`an opcode at byte ${at} claims ${n} bytes, more than the ${this.data.length - at} left`);
    this.pos += n;
    return at;
  }
}

function narrow(value: bigint): number | bigint {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}
