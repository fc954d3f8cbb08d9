/**
 * A checkpoint's tensors as torch.save stores them: typed storages in the zip, each tensor a
 * view (offset, shape, stride) of one; read back as float32, as the official loader casts them
 * (int64 words kept exact where diffq needs them). Split from checkpoint.ts.
 */
import type { PickleOpaque } from './pickle-values.js';
import type { ZipArchive } from './zip.js';

export interface CheckpointTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
  /** An int64 tensor's exact values (diffq packs bits into them), when its view is contiguous. */
  readonly words?: BigInt64Array;
}

export type StorageDtype = 'float16' | 'float32' | 'float64' | 'bfloat16' | 'int64' | 'int32' | 'uint8' | 'bool';

/** Integer storages hold bookkeeping a state_dict carries beside the weights (BatchNorm's `num_batches_tracked`). */
export const STORAGE_TYPES: Readonly<Record<string, StorageDtype>> = {
  HalfStorage: 'float16',
  FloatStorage: 'float32',
  DoubleStorage: 'float64',
  BFloat16Storage: 'bfloat16',
  LongStorage: 'int64',
  IntStorage: 'int32',
  ByteStorage: 'uint8',
  BoolStorage: 'bool',
};

export const BYTES_PER_ELEMENT: Readonly<Record<StorageDtype, number>> = {
  float16: 2,
  float32: 4,
  float64: 8,
  bfloat16: 2,
  int64: 8,
  int32: 4,
  uint8: 1,
  bool: 1,
};

export class StorageType implements PickleOpaque {
  readonly pickleKind = 'storage-type';
  constructor(readonly dtype: StorageDtype) {}
}

export class StorageRef implements PickleOpaque {
  readonly pickleKind = 'storage';
  constructor(
    readonly dtype: StorageDtype,
    readonly key: string,
    readonly numel: number,
  ) {}
}

export class TensorRef implements PickleOpaque {
  readonly pickleKind = 'tensor';
  constructor(
    readonly storage: StorageRef,
    readonly offset: number,
    readonly shape: readonly number[],
    readonly stride: readonly number[],
  ) {}
}

/** A tensor's values, from a view and storage checkView accepted. */
export function materialize(archive: ZipArchive, entry: string, tensor: TensorRef): CheckpointTensor {
  const { storage } = tensor;
  const bytes = archive.read(entry);
  const values = decodeStorage(bytes, storage.dtype, storage.numel);
  const loaded = { shape: tensor.shape, data: gather(values, tensor) };
  return storage.dtype === 'int64' && isContiguous(tensor) ? { ...loaded, words: int64Words(bytes, tensor) } : loaded;
}

/** The exact int64 values of a contiguous view. */
export function int64Words(bytes: Buffer, tensor: TensorRef): BigInt64Array {
  const count = tensor.shape.reduce((a, b) => a * b, 1);
  const words = new BigInt64Array(count);
  for (let i = 0; i < count; i++) words[i] = bytes.readBigInt64LE(8 * (tensor.offset + i));
  return words;
}

export function isContiguous(tensor: TensorRef): boolean {
  const { shape, stride } = tensor;
  return shape.includes(0) || shape.every((size, axis) => size === 1 || stride[axis] === shape.slice(axis + 1).reduce((a, b) => a * b, 1));
}

/**
 * A tensor's shape with zeros for its values, for the checks that read no weights: the zeros
 * are allocated only when a graph builder asks for them (the pages stay untouched, and so
 * unmapped, unless the builder writes a copy), and checkView already bounded their count by
 * the storage's size in the file.
 */
export function standInTensor(_archive: ZipArchive, _entry: string, tensor: TensorRef): CheckpointTensor {
  const count = tensor.shape.reduce((a, b) => a * b, 1);
  let zeros: Float32Array | undefined;
  return {
    shape: tensor.shape,
    get data() {
      return (zeros ??= new Float32Array(count));
    },
  };
}

function decodeStorage(bytes: Buffer, dtype: StorageDtype, numel: number): Float32Array {
  const out = new Float32Array(numel);
  switch (dtype) {
    case 'float32':
      for (let i = 0; i < numel; i++) out[i] = bytes.readFloatLE(4 * i);
      return out;
    case 'float64':
      for (let i = 0; i < numel; i++) out[i] = bytes.readDoubleLE(8 * i);
      return out;
    case 'float16': {
      const table = halfTable();
      for (let i = 0; i < numel; i++) out[i] = table[bytes.readUInt16LE(2 * i)] as number;
      return out;
    }
    case 'bfloat16': {
      const word = new Uint32Array(out.buffer);
      for (let i = 0; i < numel; i++) word[i] = bytes.readUInt16LE(2 * i) << 16;
      return out;
    }
    case 'int64':
      for (let i = 0; i < numel; i++) out[i] = Number(bytes.readBigInt64LE(8 * i));
      return out;
    case 'int32':
      for (let i = 0; i < numel; i++) out[i] = bytes.readInt32LE(4 * i);
      return out;
    case 'uint8':
    case 'bool':
      for (let i = 0; i < numel; i++) out[i] = bytes[i] as number;
      return out;
  }
}

/** Copies a (possibly strided) view, which checkView kept inside its storage, into a dense C-order array. */
function gather(values: Float32Array, tensor: TensorRef): Float32Array {
  const { shape, stride, offset } = tensor;
  const count = shape.reduce((a, b) => a * b, 1);
  if (isContiguous(tensor)) return offset === 0 && count === values.length ? values : values.slice(offset, offset + count);
  const out = new Float32Array(count);
  const index = new Array<number>(shape.length).fill(0);
  for (let i = 0; i < count; i++) {
    let at = offset;
    for (let axis = 0; axis < shape.length; axis++) at += (index[axis] as number) * (stride[axis] as number);
    out[i] = values[at] as number;
    for (let axis = shape.length - 1; axis >= 0; axis--) {
      index[axis] = (index[axis] as number) + 1;
      if ((index[axis] as number) < (shape[axis] as number)) break;
      index[axis] = 0;
    }
  }
  return out;
}

let halfToFloat: Float32Array | undefined;

/** All 65536 IEEE half values as float32, built once (256 KiB). */
function halfTable(): Float32Array {
  if (halfToFloat !== undefined) return halfToFloat;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exponent = (h >> 10) & 0x1f;
    const mantissa = h & 0x3ff;
    if (exponent === 0) table[h] = sign * mantissa * 2 ** -24;
    else if (exponent === 31) table[h] = mantissa === 0 ? sign * Infinity : Number.NaN;
    else table[h] = sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
  }
  halfToFloat = table;
  return table;
}
