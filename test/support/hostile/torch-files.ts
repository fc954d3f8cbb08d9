/**
 * Writers for the files PyTorch's `torch.save` makes, byte by byte, so hostile variants can be
 * crafted: pickle opcodes, tensors as `_rebuild_tensor_v2` calls, state dicts and Demucs
 * packages, and a zip writer whose entries may lie about their sizes.
 */
import { constants as zlibConstants, deflateRawSync } from 'node:zlib';

/** Pickle opcodes (protocol 2), as byte arrays to concatenate. */
export const op = {
  proto: [0x80, 2],
  stop: [0x2e],
  mark: [0x28],
  emptyDict: [0x7d],
  emptyList: [0x5d],
  emptyTuple: [0x29],
  tuple: [0x74],
  setitems: [0x75],
  append: [0x61],
  appends: [0x65],
  reduce: [0x52],
  binpersid: [0x51],
  newfalse: [0x89],
  none: [0x4e],
  dup: [0x32],
  pop: [0x30],
} as const;

export function str(text: string): number[] {
  const bytes = Buffer.from(text, 'utf8');
  return [0x58, ...u32(bytes.length), ...bytes];
}

/** An integer: BININT where it fits in 32 bits, else LONG1 (little-endian two's complement, as Python pickles larger ints). */
export function int(value: number): number[] {
  if (value >= -(2 ** 31) && value < 2 ** 31) {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32LE(value);
    return [0x4a, ...bytes];
  }
  let rest = BigInt(Math.trunc(value));
  const bytes: number[] = [];
  do {
    bytes.push(Number(rest & 0xffn));
    rest >>= 8n;
  } while (!((rest === 0n && ((bytes.at(-1) as number) & 0x80) === 0) || (rest === -1n && ((bytes.at(-1) as number) & 0x80) !== 0)));
  return [0x8a, bytes.length, ...bytes];
}

export function u32(value: number): number[] {
  const bytes = Buffer.alloc(4);
  bytes.writeUInt32LE(value >>> 0);
  return [...bytes];
}

export function global(module: string, name: string): number[] {
  return [0x63, ...Buffer.from(`${module}\n${name}\n`, 'latin1')];
}

/** A pickle whose body is `body`, framed by PROTO and STOP. */
export function pickle(body: readonly number[] | Uint8Array): Buffer {
  return Buffer.concat([Buffer.from(op.proto), Buffer.from(body), Buffer.from(op.stop)]);
}

export interface TensorMeta {
  readonly shape: readonly number[];
  /** Default: C order. */
  readonly stride?: readonly number[];
  readonly offset?: number;
  /** The storage's element count as the pickle claims it (default: the shape's). */
  readonly numel?: number;
  readonly storage?: string;
  readonly key: string;
}

export function contiguousStrides(shape: readonly number[]): number[] {
  return shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
}

export function numelOf(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/** `torch._utils._rebuild_tensor_v2(storage, offset, shape, stride, False, OrderedDict())`. */
export function tensor(meta: TensorMeta): number[] {
  const stride = meta.stride ?? contiguousStrides(meta.shape);
  return [
    ...global('torch._utils', '_rebuild_tensor_v2'),
    ...op.mark,
    ...op.mark,
    ...str('storage'),
    ...global('torch', meta.storage ?? 'FloatStorage'),
    ...str(meta.key),
    ...str('cpu'),
    ...int(meta.numel ?? numelOf(meta.shape)),
    ...op.tuple,
    ...op.binpersid,
    ...int(meta.offset ?? 0),
    ...op.mark,
    ...meta.shape.flatMap(int),
    ...op.tuple,
    ...op.mark,
    ...stride.flatMap(int),
    ...op.tuple,
    ...op.newfalse,
    ...global('collections', 'OrderedDict'),
    ...op.emptyTuple,
    ...op.reduce,
    ...op.tuple,
    ...op.reduce,
  ];
}

/** A dict `{name: tensor}` as pickle opcodes (no PROTO/STOP). */
export function stateDictOps(tensors: readonly (readonly [string, TensorMeta])[]): number[] {
  return [...op.emptyDict, ...op.mark, ...tensors.flatMap(([name, meta]) => [...str(name), ...tensor(meta)]), ...op.setitems];
}

/** A Demucs package: `{klass, args, kwargs, state}` with `kwargsOps` the kwargs dict's opcodes. */
export function demucsPackageOps(state: readonly number[], kwargsOps: readonly number[] = [...op.emptyDict]): number[] {
  return [
    ...op.emptyDict,
    ...op.mark,
    ...str('klass'),
    ...global('demucs.htdemucs', 'HTDemucs'),
    ...str('args'),
    ...op.emptyTuple,
    ...str('kwargs'),
    ...kwargsOps,
    ...str('state'),
    ...state,
    ...op.setitems,
  ];
}

export interface ZipItem {
  readonly name: string;
  readonly data: Uint8Array;
  /** 0 stored (default), 8 deflate: `data` is then already deflated. */
  readonly method?: 0 | 8;
  /** The uncompressed size the directory claims (default: data's length when stored). */
  readonly size?: number;
  /** The compressed size the directory claims (default: data's length). */
  readonly compressedSize?: number;
}

const ZIP64_LIMIT = 0xffffffff;

/** A zip archive of `items`; sizes above 4 GiB are written as zip64 extra fields, as torch does. */
export function zip(items: readonly ZipItem[]): Buffer {
  const parts: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const item of items) {
    const name = Buffer.from(item.name, 'utf8');
    const size = item.size ?? item.data.length;
    const compressedSize = item.compressedSize ?? item.data.length;
    const big = size >= ZIP64_LIMIT || compressedSize >= ZIP64_LIMIT;
    const extra = big ? zip64Extra(size, compressedSize) : Buffer.alloc(0);
    const method = item.method ?? 0;
    const version = big ? 45 : 20;
    const claimed = [big ? ZIP64_LIMIT : compressedSize, big ? ZIP64_LIMIT : size] as const;
    const local = record(30, [
      [0, 4, 0x04034b50],
      [4, 2, version],
      [8, 2, method],
      [18, 4, claimed[0]],
      [22, 4, claimed[1]],
      [26, 2, name.length],
      [28, 2, extra.length],
    ]);
    parts.push(local, name, extra, Buffer.from(item.data));
    const entry = record(46, [
      [0, 4, 0x02014b50],
      [4, 2, 45],
      [6, 2, version],
      [10, 2, method],
      [20, 4, claimed[0]],
      [24, 4, claimed[1]],
      [28, 2, name.length],
      [30, 2, extra.length],
      [42, 4, offset],
    ]);
    central.push(entry, name, extra);
    offset += local.length + name.length + extra.length + item.data.length;
  }
  const directory = Buffer.concat(central);
  const end = record(22, [
    [0, 4, 0x06054b50],
    [8, 2, items.length],
    [10, 2, items.length],
    [12, 4, directory.length],
    [16, 4, offset],
  ]);
  return Buffer.concat([...parts, directory, end]);
}

/** A little-endian record of `length` bytes with the given (offset, width, value) fields set. */
function record(length: number, fields: readonly (readonly [at: number, width: 2 | 4, value: number])[]): Buffer {
  const out = Buffer.alloc(length);
  for (const [at, width, value] of fields) {
    if (width === 2) out.writeUInt16LE(value, at);
    else out.writeUInt32LE(value, at);
  }
  return out;
}

function zip64Extra(size: number, compressedSize: number): Buffer {
  const extra = Buffer.alloc(20);
  extra.writeUInt16LE(0x0001, 0);
  extra.writeUInt16LE(16, 2);
  extra.writeBigUInt64LE(BigInt(size), 4);
  extra.writeBigUInt64LE(BigInt(compressedSize), 12);
  return extra;
}

/** A torch file: `archive/data.pkl` and one stored entry per storage. */
export function torchFile(pickleBytes: Uint8Array, storages: Readonly<Record<string, Uint8Array>> = {}): Buffer {
  return zip([{ name: 'archive/data.pkl', data: pickleBytes }, ...Object.entries(storages).map(([key, data]) => ({ name: `archive/data/${key}`, data }))]);
}

/** float32 little-endian bytes of `count` small values. */
export function floats(count: number, value = 0.5): Buffer {
  const bytes = Buffer.alloc(4 * count);
  for (let i = 0; i < count; i++) bytes.writeFloatLE(value, 4 * i);
  return bytes;
}

/**
 * A raw deflate stream that inflates to `bytes` zero bytes, made from one compressed chunk
 * repeated: full flushes end each chunk on a byte boundary with no back-references across it.
 */
export function zeroBomb(bytes: number, chunk = 64 << 20): Buffer {
  const block = deflatedZeros(Math.min(chunk, bytes));
  const repeats = Math.ceil(bytes / Math.min(chunk, bytes));
  // An empty final stored block ends the stream.
  return Buffer.concat([...Array.from({ length: repeats }, () => block), Buffer.from([0x03, 0x00])]);
}

const zeroBlocks = new Map<number, Buffer>();

/** `size` zero bytes deflated, each size once per process (64 MiB take 0.2-0.7 s to deflate here, and the fuzz test writes its bombs several times). */
function deflatedZeros(size: number): Buffer {
  let block = zeroBlocks.get(size);
  if (block === undefined) {
    block = deflateRawSync(Buffer.alloc(size), { finishFlush: zlibConstants.Z_FULL_FLUSH });
    zeroBlocks.set(size, block);
  }
  return block;
}
