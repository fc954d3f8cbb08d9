/**
 * A minimal protobuf encoder and reader: just the wire types ONNX needs. A message is a list of
 * byte chunks plus its total length, so large payloads (weights) are referenced, never
 * copied, until the model is written out.
 */
const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LENGTH_DELIMITED = 2;
const WIRE_FIXED32 = 5;

export class ProtoMessage {
  private readonly chunks: Uint8Array[] = [];
  private pending: number[] = [];
  private size = 0;

  get byteLength(): number {
    return this.size + this.pending.length;
  }

  int(field: number, value: number | bigint): this {
    this.tag(field, WIRE_VARINT);
    this.varint(value);
    return this;
  }

  float(field: number, value: number): this {
    this.tag(field, WIRE_FIXED32);
    const bytes = new Uint8Array(4);
    new DataView(bytes.buffer).setFloat32(0, value, true);
    this.pending.push(...bytes);
    return this;
  }

  double(field: number, value: number): this {
    this.tag(field, WIRE_FIXED64);
    const bytes = new Uint8Array(8);
    new DataView(bytes.buffer).setFloat64(0, value, true);
    this.pending.push(...bytes);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytes(field, new TextEncoder().encode(value));
  }

  bytes(field: number, value: Uint8Array): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(value.byteLength);
    this.append(value);
    return this;
  }

  message(field: number, value: ProtoMessage): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(value.byteLength);
    value.flush();
    for (const chunk of value.chunks) this.append(chunk);
    return this;
  }

  /** A packed repeated varint field (e.g. int64 dims). */
  packedInts(field: number, values: readonly (number | bigint)[]): this {
    const inner = new ProtoMessage();
    for (const value of values) inner.varint(value);
    inner.flush();
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.varint(inner.byteLength);
    for (const chunk of inner.chunks) this.append(chunk);
    return this;
  }

  /** A packed repeated float field. */
  packedFloats(field: number, values: readonly number[]): this {
    const bytes = new Uint8Array(values.length * 4);
    const view = new DataView(bytes.buffer);
    values.forEach((value, i) => view.setFloat32(4 * i, value, true));
    return this.bytes(field, bytes);
  }

  /** The encoded message as chunks, in order. */
  encoded(): readonly Uint8Array[] {
    this.flush();
    return this.chunks;
  }

  /** The encoded message in one buffer (a copy of its chunks). */
  toBytes(): Uint8Array {
    return concatBytes(this.encoded());
  }

  private tag(field: number, wireType: number): void {
    this.varint(field * 8 + wireType);
  }

  /** int64 varint; negative values are written as 10-byte two's complement, as protobuf does. */
  private varint(value: number | bigint): void {
    let v = BigInt.asUintN(64, BigInt(value));
    if (typeof value === 'number' && value >= 0 && value < 2 ** 31) {
      let n = value;
      while (n >= 0x80) {
        this.pending.push((n & 0x7f) | 0x80);
        n >>>= 7;
      }
      this.pending.push(n);
      return;
    }
    while (v >= 0x80n) {
      this.pending.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    this.pending.push(Number(v));
  }

  private append(chunk: Uint8Array): void {
    this.flush();
    this.chunks.push(chunk);
    this.size += chunk.byteLength;
  }

  private flush(): void {
    if (this.pending.length === 0) return;
    const bytes = Uint8Array.from(this.pending);
    this.pending = [];
    this.chunks.push(bytes);
    this.size += bytes.byteLength;
  }
}

/** One field of an encoded message, as `protoFields` reads it. */
export interface ProtoField {
  readonly number: number;
  readonly wire: number;
  /** The whole field, tag included. */
  readonly raw: Uint8Array;
  /** The payload of a length-delimited field (empty for the others). */
  readonly body: Uint8Array;
  /** The value of a varint field (0 for the others). */
  readonly value: number;
}

/** The fields of an encoded message in order; payloads are views into `message`, not copies. */
export function* protoFields(message: Uint8Array): Generator<ProtoField> {
  let at = 0;
  while (at < message.length) {
    const start = at;
    const [tag, afterTag] = readVarint(message, at);
    const number = Math.floor(tag / 8);
    const wire = tag % 8;
    let end: number;
    let body = message.subarray(afterTag, afterTag);
    let value = 0;
    if (wire === WIRE_VARINT) [value, end] = readVarint(message, afterTag);
    else if (wire === WIRE_FIXED64) end = afterTag + 8;
    else if (wire === WIRE_FIXED32) end = afterTag + 4;
    else if (wire === WIRE_LENGTH_DELIMITED) {
      const [length, afterLength] = readVarint(message, afterTag);
      end = afterLength + length;
      body = message.subarray(afterLength, end);
    } else throw new Error(`unsupported protobuf wire type ${wire}`);
    if (end > message.length) throw new Error('truncated protobuf message');
    at = end;
    yield { number, wire, raw: message.subarray(start, end), body, value };
  }
}

/** The varints of a packed repeated field's payload (e.g. int64 dims). */
export function packedVarints(body: Uint8Array): number[] {
  const values: number[] = [];
  for (let at = 0; at < body.length; ) {
    const [value, next] = readVarint(body, at);
    values.push(value);
    at = next;
  }
  return values;
}

/** The message with each field replaced by what `map` returns (its raw bytes to keep it, empty to drop it). */
export function rewriteMessage(message: Uint8Array, map: (field: ProtoField) => Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  for (const field of protoFields(message)) parts.push(map(field));
  return concatBytes(parts);
}

/** A length-delimited field with the given payload. */
export function lengthField(number: number, body: Uint8Array): Uint8Array {
  return new ProtoMessage().bytes(number, body).toBytes();
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** A non-negative varint below 2^53 (lengths, tags, dims); returns it and the offset after it. */
function readVarint(bytes: Uint8Array, at: number): [number, number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < bytes.length; i++) {
    const byte = bytes[i] as number;
    value += (byte & 0x7f) * scale;
    if (byte < 0x80) return [value, i + 1];
    scale *= 128;
  }
  throw new Error('truncated protobuf varint');
}
