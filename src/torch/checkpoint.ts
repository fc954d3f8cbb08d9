/**
 * Reads PyTorch checkpoints as `torch.save` wrote them: a zip with `data.pkl` and one raw
 * storage file per tensor. Two shapes: a model package (a dict of `klass`, `args`, `kwargs`,
 * `state`, `training_args`, as Demucs saves its models; `readCheckpoint`) and a plain state_dict,
 * as MSST checkpoints are (`readStateDict`). Tensors come back as float32 whatever their stored
 * type, as the official loader casts them.
 *
 * Reading a checkpoint never runs code: the pickle's globals resolve to the few callables below
 * (storages, ordered dicts, tensors, fractions) or, for a package, to inert names of classes in
 * the modules its caller names (`ClassModules`); any other global is refused in one line.
 */
import { createHash } from 'node:crypto';
import { describeError, isStemsplitError, StemsplitError } from '../errors.js';
import { unpickle } from './pickle.js';
import { PickleCallable, PickleGlobalRef, PickleTuple, type PickleKey, type PickleOpaque, type PickleValue } from './pickle-values.js';
import { ZipArchive } from './zip.js';

import {
  BYTES_PER_ELEMENT,
  materialize,
  standInTensor,
  STORAGE_TYPES,
  StorageRef,
  StorageType,
  TensorRef,
  type CheckpointTensor,
  type StorageDtype,
} from './storage.js';

export type { CheckpointTensor } from './storage.js';

export interface Checkpoint {
  /** Fully qualified class name, e.g. `demucs.htdemucs.HTDemucs`: a class of one of the caller's ClassModules. */
  readonly klass: string;
  readonly args: readonly PickleValue[];
  readonly kwargs: ReadonlyMap<string, PickleValue>;
  readonly state: ReadonlyMap<string, CheckpointTensor>;
  /**
   * A state that is not a dict of tensors: diffq's quantized one (`__quantized`), as unpickled,
   * each tensor in it a LoadedTensor; `state` is then empty and the model's family reads this.
   */
  readonly quantized?: PickleValue;
}

/** A tensor inside a `quantized` state, read (and checked) as every other tensor is. */
export class LoadedTensor implements PickleOpaque {
  readonly pickleKind = 'loaded-tensor';
  constructor(readonly tensor: CheckpointTensor) {}
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

/**
 * The modules whose classes a package may name (`demucs` allows `demucs.htdemucs.HTDemucs`, not
 * `demucsx.Y`): its model class (`klass`) and any a quantized state's metadata names. They are
 * kept as names (PickleGlobalRef), never built, and the caller decides which ones it runs.
 */
export type ClassModules = readonly string[];

/** A model package whose classes lie in `classModules` (see ClassModules). */
export function readCheckpoint(path: string, classModules: ClassModules): Checkpoint {
  return readTorchFile(path, packageGlobals(classModules), (root, load) => interpretPackage(path, root, load), materialize);
}

/**
 * Refuses what readCheckpoint would refuse for the file's structure (zip, pickle, classes,
 * tensor views against their storages) without reading any weights: run before a checkpoint
 * is hashed or converted, so a damaged or hostile file is refused in moments whatever its size.
 * Returns the checkpoint with stand-in weights (standInTensor): a family's graph builder run
 * against them checks every shape against the config, still without reading a weight.
 */
export function checkCheckpoint(path: string, classModules: ClassModules): Checkpoint {
  return readTorchFile(path, packageGlobals(classModules), (root, load) => interpretPackage(path, root, load), standInTensor);
}

const pickleHashes = new WeakMap<object, string>();

/**
 * The SHA-256 of the `data.pkl` that checkCheckpoint or checkStateDict read `shapes` from:
 * everything the tensors' names, shapes and storages are (and a package's class and
 * kwargs), so a check of those that passed once holds for any file with the same pickle.
 */
export function pickleSha256(shapes: Checkpoint | ReadonlyMap<string, CheckpointTensor>): string {
  const hash = pickleHashes.get(shapes);
  if (hash === undefined) throw new Error('pickleSha256 takes what checkCheckpoint or checkStateDict returned');
  return hash;
}

/** readStateDict's checks without reading any weights, its tensors stand-ins (see checkCheckpoint). */
export function checkStateDict(path: string): ReadonlyMap<string, CheckpointTensor> {
  return readStateDictWith(path, standInTensor);
}

/**
 * Reads a plain PyTorch state_dict file (`torch.save(model.state_dict())`, as MSST and most
 * community checkpoints are), also one wrapped under `state_dict`, `state` or
 * `model_state_dict`, with DataParallel's `module.` prefixes removed. Other values beside
 * the wrapped dict (epoch numbers, optimizer state) are ignored.
 */
export function readStateDict(path: string): ReadonlyMap<string, CheckpointTensor> {
  return readStateDictWith(path, materialize);
}

function readStateDictWith(path: string, read: TensorReader): ReadonlyMap<string, CheckpointTensor> {
  return readTorchFile(
    path,
    resolveStateGlobal,
    (root, load) => {
      const state = findStateDict(root);
      if (state === undefined) {
        throw new StemsplitError('MODEL_INVALID', `${path} holds no state_dict (a dict of tensors, or one under state_dict/state/model_state_dict)`);
      }
      const tensors: [string, TensorRef][] = [];
      for (const [name, value] of state) {
        if (typeof name !== 'string' || !(value instanceof TensorRef)) continue;
        tensors.push([name.startsWith('module.') ? name.slice('module.'.length) : name, value]);
      }
      return load(tensors);
    },
    read,
  );
}

/** The largest data.pkl read: a real one describes thousands of tensors in a few MB. */
const MAX_PICKLE_BYTES = 64 * 2 ** 20;

/** Most dimensions a torch tensor can have. */
const MAX_DIMS = 64;

/** Reads one tensor whose view and storage entry were checked; `standInTensor` reads nothing. */
type TensorReader = (archive: ZipArchive, entry: string, tensor: TensorRef) => CheckpointTensor;

/** Loads named tensors: every view and storage is checked first, so nothing is read from a file that will be refused. */
type TensorLoader = (tensors: readonly (readonly [string, TensorRef])[]) => Map<string, CheckpointTensor>;

/**
 * Opens torch's zip format, unpickles `data.pkl` with the given globals, and hands `interpret` a
 * loader for its tensors. Every refusal names the file.
 */
function readTorchFile<T>(
  path: string,
  resolve: (module: string, name: string) => PickleCallable | PickleGlobalRef | StorageType,
  interpret: (root: PickleValue, load: TensorLoader) => T,
  read: TensorReader,
): T {
  const archive = ZipArchive.open(path);
  try {
    const pickleName = [...archive.entries.keys()].find((name) => name.endsWith('/data.pkl') || name === 'data.pkl');
    if (pickleName === undefined) {
      throw new StemsplitError('MODEL_INVALID', `${path} is not a PyTorch checkpoint (no data.pkl)`);
    }
    const prefix = pickleName.slice(0, pickleName.length - 'data.pkl'.length);
    checkByteOrder(path, archive, `${prefix}byteorder`);
    const pickled = archive.read(pickleName, MAX_PICKLE_BYTES);
    const root = unpickle(pickled, { resolveGlobal: resolve, persistentLoad }, path);
    const result = interpret(root, (tensors) => {
      const entries = tensors.map(([name, tensor]) => checkView(path, archive, `${prefix}data/${tensor.storage.key}`, name, tensor));
      return new Map(tensors.map(([name, tensor], i) => [name, read(archive, entries[i] as string, tensor)]));
    });
    if (read === standInTensor && typeof result === 'object' && result !== null) pickleHashes.set(result, createHash('sha256').update(pickled).digest('hex'));
    return result;
  } catch (error) {
    throw namingFile(path, error);
  } finally {
    archive.close();
  }
}

/**
 * torch 2.1 and later write `byteorder`, the saving machine's: a `big` checkpoint's storages hold
 * big-endian values (torch.load swaps them), which read as little-endian would be other weights
 * entirely, and stems from them noise. Older files have no such entry and are little-endian.
 */
function checkByteOrder(path: string, archive: ZipArchive, entry: string): void {
  if (!archive.entries.has(entry)) return;
  const order = archive.read(entry, 16).toString('latin1').trim();
  if (order === 'little') return;
  const stored = order === 'big' ? 'its weights are stored big-endian' : `its byteorder entry says ${JSON.stringify(order)}`;
  throw new StemsplitError(
    'MODEL_INVALID',
    `${path}: ${stored}; stemsplit reads little-endian checkpoints only (load and save it again with torch on an x86 or ARM machine)`,
  );
}

/**
 * A refusal that names the file. A RangeError (a call stack or an allocation a malformed file
 * drove too far) is the file's fault, said in one line; anything else is a bug and goes on as it is.
 */
function namingFile(path: string, error: unknown): unknown {
  if (isStemsplitError(error)) return error.message.includes(path) ? error : new StemsplitError(error.code, `${path}: ${error.message}`, { cause: error });
  if (error instanceof RangeError)
    return new StemsplitError('MODEL_INVALID', `${path} is not a PyTorch checkpoint stemsplit can read (${describeError(error)})`, { cause: error });
  return error;
}

/**
 * Checks a tensor's view against its storage before anything is read: every element the shape
 * and strides reach lies inside the storage, zero or negative strides only where the shape is
 * empty, and the storage's claimed size fits in its zip entry. Returns the entry's name.
 */
function checkView(path: string, archive: ZipArchive, entryName: string, name: string, tensor: TensorRef): string {
  const { storage, shape, stride, offset } = tensor;
  const fail = (detail: string) => new StemsplitError('MODEL_INVALID', `${path}: tensor ${name} ${detail}`);
  if (shape.length > MAX_DIMS) throw fail(`has ${shape.length} dimensions (torch allows ${MAX_DIMS})`);
  if (stride.length !== shape.length) throw fail(`has ${shape.length} dimensions but ${stride.length} strides`);
  const whole = (value: number) => Number.isSafeInteger(value) && value >= 0;
  if (!shape.every(whole)) throw fail(`has the shape [${shape.join(', ')}]`);
  if (!whole(offset)) throw fail(`starts at offset ${offset}`);
  if (!whole(storage.numel)) throw fail(`claims a storage of ${storage.numel} elements`);
  const entry = archive.entries.get(entryName);
  if (entry === undefined) throw fail(`names storage ${storage.key}, which the checkpoint lacks`);
  const bytes = storage.numel * BYTES_PER_ELEMENT[storage.dtype];
  if (bytes > entry.size)
    throw fail(`claims a storage of ${storage.numel} ${storage.dtype} values (${bytes} bytes), but storage ${storage.key} holds ${entry.size} bytes`);
  if (shape.includes(0)) return entryName;
  let count = 1;
  let last = offset;
  for (const [axis, size] of shape.entries()) {
    const step = stride[axis] as number;
    if (size > 1 && !(Number.isSafeInteger(step) && step >= 1))
      throw fail(`has stride ${step} on an axis of ${size}: only an empty tensor may have zero or negative strides`);
    count *= size;
    if (size > 1) last += (size - 1) * step;
    if (count > storage.numel || last >= storage.numel) {
      throw fail(`[${shape.join(', ')}] with strides [${stride.join(', ')}] from offset ${offset} reaches past its storage of ${storage.numel} values`);
    }
  }
  return entryName;
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

function interpretPackage(path: string, root: PickleValue, load: TensorLoader): Checkpoint {
  if (!(root instanceof Map)) throw invalid(path, 'the top-level value is not a dict');
  const klass = root.get('klass');
  if (!(klass instanceof PickleGlobalRef)) throw invalid(path, 'no model class (`klass`)');
  const args = root.get('args');
  const kwargs = root.get('kwargs');
  const state = root.get('state');
  if (!(kwargs instanceof Map)) throw invalid(path, '`kwargs` is not a dict');
  if (!(state instanceof Map)) throw invalid(path, '`state` is not a dict');
  if (state.has('__quantized')) {
    return {
      klass: klass.qualifiedName,
      args: args instanceof PickleTuple ? args.items : Array.isArray(args) ? args : [],
      kwargs: stringKeyed(path, kwargs),
      state: new Map(),
      quantized: loadedTree(state, load),
    };
  }
  const tensors: [string, TensorRef][] = [];
  for (const [name, value] of state) {
    if (typeof name !== 'string' || !(value instanceof TensorRef)) throw invalid(path, `state entry ${String(name)} is not a tensor`);
    tensors.push([name, value]);
  }
  return {
    klass: klass.qualifiedName,
    args: args instanceof PickleTuple ? args.items : Array.isArray(args) ? args : [],
    kwargs: stringKeyed(path, kwargs),
    state: load(tensors),
  };
}

/** `value` with every tensor in it loaded (all through `load`, so each view is checked first). */
function loadedTree(value: PickleValue, load: TensorLoader): PickleValue {
  const refs: [string, TensorRef][] = [];
  const collect = (item: PickleValue): void => {
    if (item instanceof TensorRef) refs.push([`tensor ${refs.length}`, item]);
    else if (item instanceof Map) for (const inner of item.values()) collect(inner);
    else if (Array.isArray(item)) for (const inner of item) collect(inner);
    else if (item instanceof PickleTuple) for (const inner of item.items) collect(inner);
  };
  collect(value);
  const loaded = load(refs);
  let next = 0;
  const rebuild = (item: PickleValue): PickleValue => {
    if (item instanceof TensorRef) return new LoadedTensor(loaded.get(`tensor ${next++}`) as CheckpointTensor);
    if (item instanceof Map) return new Map([...item].map(([key, inner]) => [key, rebuild(inner)]));
    if (Array.isArray(item)) return item.map(rebuild);
    if (item instanceof PickleTuple) return new PickleTuple(item.items.map(rebuild));
    return item;
  };
  return rebuild(value);
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

/** The globals a package may name: torch's, `fractions.Fraction`, and the classes of `classModules` as names only. */
function packageGlobals(classModules: ClassModules): (module: string, name: string) => PickleCallable | PickleGlobalRef | StorageType {
  return (module, name) => {
    const qualified = `${module}.${name}`;
    const torch = torchGlobal(module, name);
    if (torch !== undefined) return torch;
    if (qualified === 'fractions.Fraction') return new PickleCallable(qualified, fraction);
    // Classes are only named (a package's `klass`, a quantizer's in its metadata), never built,
    // so any class of an allowed module may appear; the caller decides which ones it supports.
    if (classModules.some((allowed) => module === allowed || module.startsWith(`${allowed}.`))) return new PickleGlobalRef(module, name);
    throw new StemsplitError('MODEL_INVALID', `unsupported class ${qualified} in checkpoint`);
  };
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
