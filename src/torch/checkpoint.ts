/**
 * Reads PyTorch checkpoints as `torch.save` wrote them: a zip with `data.pkl` and one raw
 * storage file per tensor. Two shapes: a Demucs package (a dict of `klass`, `args`, `kwargs`,
 * `state`, `training_args`; `readCheckpoint`) and a plain state_dict, as MSST checkpoints are
 * (`readStateDict`). Tensors come back as float32 whatever their stored type, as the official
 * loader casts them.
 */
import { StemsplitError } from '../errors.js';
import {
  PickleCallable,
  PickleGlobalRef,
  PickleTuple,
  unpickle,
  type PickleKey,
  type PickleOpaque,
  type PickleValue,
} from './pickle.js';
import { ZipArchive } from './zip.js';

export interface CheckpointTensor {
  readonly shape: readonly number[];
  readonly data: Float32Array;
}

export interface Checkpoint {
  /** Fully qualified class name, e.g. `demucs.htdemucs.HTDemucs`. */
  readonly klass: string;
  readonly args: readonly PickleValue[];
  readonly kwargs: ReadonlyMap<string, PickleValue>;
  readonly state: ReadonlyMap<string, CheckpointTensor>;
}

/** `fractions.Fraction`, as HTDemucs stores its `segment`. */
export class PyFraction implements PickleOpaque {
  readonly pickleKind = 'fraction';
  constructor(
    readonly numerator: number,
    readonly denominator: number,
  ) {}

  valueOf(): number {
    return this.numerator / this.denominator;
  }
}

type StorageDtype = 'float16' | 'float32' | 'float64' | 'bfloat16' | 'int64' | 'int32' | 'uint8' | 'bool';

/** Integer storages hold bookkeeping a state_dict carries beside the weights (BatchNorm's `num_batches_tracked`). */
const STORAGE_TYPES: Readonly<Record<string, StorageDtype>> = {
  HalfStorage: 'float16',
  FloatStorage: 'float32',
  DoubleStorage: 'float64',
  BFloat16Storage: 'bfloat16',
  LongStorage: 'int64',
  IntStorage: 'int32',
  ByteStorage: 'uint8',
  BoolStorage: 'bool',
};

const BYTES_PER_ELEMENT: Readonly<Record<StorageDtype, number>> = { float16: 2, float32: 4, float64: 8, bfloat16: 2, int64: 8, int32: 4, uint8: 1, bool: 1 };

class StorageType implements PickleOpaque {
  readonly pickleKind = 'storage-type';
  constructor(readonly dtype: StorageDtype) {}
}

class StorageRef implements PickleOpaque {
  readonly pickleKind = 'storage';
  constructor(
    readonly dtype: StorageDtype,
    readonly key: string,
    readonly numel: number,
  ) {}
}

class TensorRef implements PickleOpaque {
  readonly pickleKind = 'tensor';
  constructor(
    readonly storage: StorageRef,
    readonly offset: number,
    readonly shape: readonly number[],
    readonly stride: readonly number[],
  ) {}
}

export function readCheckpoint(path: string): Checkpoint {
  return readTorchFile(path, resolveGlobal, (root, load) => interpretPackage(path, root, load));
}

/**
 * Reads a plain PyTorch state_dict file (`torch.save(model.state_dict())`, as MSST and most
 * community checkpoints are), also one wrapped under `state_dict`, `state` or
 * `model_state_dict`, with DataParallel's `module.` prefixes removed. Other values beside
 * the wrapped dict (epoch numbers, optimizer state) are ignored.
 */
export function readStateDict(path: string): ReadonlyMap<string, CheckpointTensor> {
  return readTorchFile(path, resolveStateGlobal, (root, load) => {
    const state = findStateDict(root);
    if (state === undefined) {
      throw new StemsplitError('MODEL_INVALID', `${path} holds no state_dict (a dict of tensors, or one under state_dict/state/model_state_dict)`);
    }
    const tensors = new Map<string, CheckpointTensor>();
    for (const [name, value] of state) {
      if (typeof name !== 'string' || !(value instanceof TensorRef)) continue;
      tensors.set(name.startsWith('module.') ? name.slice('module.'.length) : name, load(value));
    }
    return tensors;
  });
}

/** Opens torch's zip format, unpickles `data.pkl` with the given globals, and hands `read` a loader for its tensors. */
function readTorchFile<T>(
  path: string,
  resolve: (module: string, name: string) => PickleCallable | PickleGlobalRef | StorageType,
  read: (root: PickleValue, load: (tensor: TensorRef) => CheckpointTensor) => T,
): T {
  const archive = ZipArchive.open(path);
  try {
    const pickleName = [...archive.entries.keys()].find((name) => name.endsWith('/data.pkl') || name === 'data.pkl');
    if (pickleName === undefined) {
      throw new StemsplitError('MODEL_INVALID', `${path} is not a PyTorch checkpoint (no data.pkl)`);
    }
    const prefix = pickleName.slice(0, pickleName.length - 'data.pkl'.length);
    const root = unpickle(archive.read(pickleName), { resolveGlobal: resolve, persistentLoad });
    return read(root, (tensor) => materialize(archive, prefix, tensor));
  } finally {
    archive.close();
  }
}

function findStateDict(root: PickleValue): Map<PickleKey, PickleValue> | undefined {
  if (!(root instanceof Map)) return undefined;
  const values = [...root.values()];
  if (values.length > 0 && values.some((value) => value instanceof TensorRef)) return root;
  for (const key of ['state_dict', 'model_state_dict', 'state', 'model']) {
    const inner = root.get(key);
    if (inner instanceof Map) return findStateDict(inner);
  }
  return undefined;
}

/** Globals a state_dict file may name: tensors, parameters, dicts; anything else is kept as an inert reference. */
function resolveStateGlobal(module: string, name: string): PickleCallable | PickleGlobalRef | StorageType {
  if (`${module}.${name}` === 'torch._utils._rebuild_parameter') return new PickleCallable('torch._utils._rebuild_parameter', (args) => args[0] ?? null);
  return torchGlobal(module, name) ?? new PickleGlobalRef(module, name);
}

/** What every torch file names: storage types, ordered dicts and tensors. */
function torchGlobal(module: string, name: string): PickleCallable | StorageType | undefined {
  const qualified = `${module}.${name}`;
  if (module === 'torch' && name in STORAGE_TYPES) return new StorageType(STORAGE_TYPES[name] as StorageDtype);
  if (qualified === 'collections.OrderedDict') return new PickleCallable(qualified, orderedDict);
  if (qualified === 'torch._utils._rebuild_tensor_v2') return new PickleCallable(qualified, rebuildTensor);
  return undefined;
}

function interpretPackage(
  path: string,
  root: PickleValue,
  load: (tensor: TensorRef) => CheckpointTensor,
): Checkpoint {
  if (!(root instanceof Map)) throw invalid(path, 'the top-level value is not a dict');
  const klass = root.get('klass');
  if (!(klass instanceof PickleGlobalRef)) throw invalid(path, 'no model class (`klass`)');
  const args = root.get('args');
  const kwargs = root.get('kwargs');
  const state = root.get('state');
  if (!(kwargs instanceof Map)) throw invalid(path, '`kwargs` is not a dict');
  if (!(state instanceof Map)) throw invalid(path, '`state` is not a dict');
  if (state.has('__quantized')) {
    throw new StemsplitError('MODEL_INVALID', `${path} holds a quantized (diffq) state, which is not supported`);
  }
  const tensors = new Map<string, CheckpointTensor>();
  for (const [name, value] of state) {
    if (typeof name !== 'string' || !(value instanceof TensorRef)) throw invalid(path, `state entry ${String(name)} is not a tensor`);
    tensors.set(name, load(value));
  }
  return {
    klass: klass.qualifiedName,
    args: args instanceof PickleTuple ? args.items : Array.isArray(args) ? args : [],
    kwargs: stringKeyed(path, kwargs),
    state: tensors,
  };
}

function stringKeyed(path: string, dict: Map<PickleKey, PickleValue>): Map<string, PickleValue> {
  const out = new Map<string, PickleValue>();
  for (const [key, value] of dict) {
    if (typeof key !== 'string') throw invalid(path, 'a `kwargs` key is not a string');
    out.set(key, value);
  }
  return out;
}

function invalid(path: string, detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `${path} is not a PyTorch checkpoint stemsplit can read: ${detail}`);
}

function resolveGlobal(module: string, name: string): PickleCallable | PickleGlobalRef | StorageType {
  const qualified = `${module}.${name}`;
  const torch = torchGlobal(module, name);
  if (torch !== undefined) return torch;
  if (qualified === 'fractions.Fraction') return new PickleCallable(qualified, fraction);
  // Model classes are only named (as `klass`), never built, so any demucs class may appear;
  // the caller decides which ones it supports.
  if (module === 'demucs' || module.startsWith('demucs.')) return new PickleGlobalRef(module, name);
  throw new StemsplitError('MODEL_INVALID', `unsupported class ${qualified} in checkpoint`);
}

function orderedDict(args: readonly PickleValue[]): PickleValue {
  const dict = new Map<PickleKey, PickleValue>();
  const pairs = args[0];
  if (Array.isArray(pairs)) {
    for (const pair of pairs) {
      if (pair instanceof PickleTuple && pair.items.length === 2) dict.set(pair.items[0] as PickleKey, pair.items[1] ?? null);
    }
  }
  return dict;
}

function fraction(args: readonly PickleValue[]): PickleValue {
  const [first, second] = args;
  if (typeof first === 'string') {
    const match = /^\s*(-?\d+)\s*(?:\/\s*(\d+))?\s*$/.exec(first);
    if (match === null) throw new StemsplitError('MODEL_INVALID', `unsupported Fraction literal '${first}' in checkpoint`);
    return new PyFraction(Number(match[1]), Number(match[2] ?? 1));
  }
  if (typeof first === 'number' && (second === undefined || typeof second === 'number')) {
    return new PyFraction(first, second ?? 1);
  }
  throw new StemsplitError('MODEL_INVALID', 'unsupported Fraction arguments in checkpoint');
}

function rebuildTensor(args: readonly PickleValue[]): PickleValue {
  const [storage, offset, size, stride] = args;
  if (!(storage instanceof StorageRef) || typeof offset !== 'number') {
    throw new StemsplitError('MODEL_INVALID', 'malformed tensor in checkpoint');
  }
  return new TensorRef(storage, offset, intTuple(size), intTuple(stride));
}

function intTuple(value: PickleValue | undefined): number[] {
  if (!(value instanceof PickleTuple) || !value.items.every((item) => typeof item === 'number')) {
    throw new StemsplitError('MODEL_INVALID', 'malformed tensor shape in checkpoint');
  }
  return value.items as number[];
}

/** torch's persistent id for a storage: ('storage', StorageType, key, location, numel). */
function persistentLoad(pid: PickleValue): PickleValue {
  if (pid instanceof PickleTuple && pid.items[0] === 'storage') {
    const [, type, key, , numel] = pid.items;
    if (type instanceof StorageType && typeof key === 'string' && typeof numel === 'number') {
      return new StorageRef(type.dtype, key, numel);
    }
    if (type instanceof PickleGlobalRef) {
      throw new StemsplitError('MODEL_INVALID', `unsupported class ${type.qualifiedName} in checkpoint`);
    }
  }
  throw new StemsplitError('MODEL_INVALID', 'unsupported persistent reference in checkpoint');
}

function materialize(archive: ZipArchive, prefix: string, tensor: TensorRef): CheckpointTensor {
  const { storage } = tensor;
  const bytes = archive.read(`${prefix}data/${storage.key}`);
  if (bytes.length < storage.numel * BYTES_PER_ELEMENT[storage.dtype]) {
    throw new StemsplitError('MODEL_INVALID', `storage ${storage.key} in checkpoint is truncated`);
  }
  const values = decodeStorage(bytes, storage.dtype, storage.numel);
  return { shape: tensor.shape, data: gather(values, tensor) };
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

/** Copies a (possibly strided) view out of its storage into a dense C-order array. */
function gather(values: Float32Array, tensor: TensorRef): Float32Array {
  const { shape, stride, offset } = tensor;
  const count = shape.reduce((a, b) => a * b, 1);
  const last = offset + shape.reduce((sum, size, axis) => sum + (size - 1) * (stride[axis] ?? 0), 0);
  if (count > 0 && last >= values.length) {
    throw new StemsplitError('MODEL_INVALID', 'tensor in checkpoint overruns its storage');
  }
  const contiguous = shape.every((size, axis) => size === 1 || stride[axis] === shape.slice(axis + 1).reduce((a, b) => a * b, 1));
  if (contiguous) return offset === 0 && count === values.length ? values : values.slice(offset, offset + count);
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
