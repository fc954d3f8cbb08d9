/**
 * What the unpickler (pickle.ts) builds: Python's plain data, tuples kept apart from lists, and
 * what the caller's hooks return: callables it allows, classes named only, opaque values.
 */
/** A Python callable the caller allows: REDUCE calls it with the argument tuple. */
export class PickleCallable {
  constructor(
    readonly qualifiedName: string,
    readonly call: (args: readonly PickleValue[]) => PickleValue,
  ) {}
}

/** A Python class (or other global) referenced by name only, e.g. a checkpoint's `klass`. */
export class PickleGlobalRef {
  constructor(
    readonly module: string,
    readonly name: string,
  ) {}

  get qualifiedName(): string {
    return `${this.module}.${this.name}`;
  }
}

/** A Python tuple: kept apart from lists so callers can tell them apart. */
export class PickleTuple {
  constructor(readonly items: readonly PickleValue[]) {}
}

export type PickleKey = string | number | bigint | boolean | null;

/** Opaque values produced by the caller's hooks (tensors, fractions, ...). */
export interface PickleOpaque {
  readonly pickleKind: string;
}

export type PickleValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | PickleValue[]
  | PickleTuple
  | Map<PickleKey, PickleValue>
  | Set<PickleKey>
  | PickleCallable
  | PickleGlobalRef
  | PickleOpaque;
