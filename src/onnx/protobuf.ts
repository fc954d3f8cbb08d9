/**
 * A minimal protobuf encoder: just the wire types ONNX needs. A message is a list of
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
