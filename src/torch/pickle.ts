/**
 * A small unpickler for the plain data inside PyTorch checkpoints.
 *
 * It builds None, booleans, ints, floats, strings, bytes, lists, tuples, dicts and sets
 * (protocols 0–4). Everything else goes through two hooks the caller supplies:
 * `resolveGlobal` (GLOBAL/STACK_GLOBAL, the only way a pickle can name code) and
 * `persistentLoad` (BINPERSID, how torch refers to tensor storages). No Python object is
 * ever constructed from a name the caller did not allow, so a hostile file cannot run code.
 * The values it builds are pickle-values.ts's; the operands' bytes are read, their lengths
 * checked, by pickle-input.ts.
 */
import { StemsplitError } from '../errors.js';
import { PickleInput } from './pickle-input.js';
import { PickleCallable, PickleGlobalRef, PickleTuple, type PickleKey, type PickleValue } from './pickle-values.js';

export interface UnpickleHooks {
  /** Returns what GLOBAL `module name` stands for, or throws if it is not allowed. */
  resolveGlobal(module: string, name: string): PickleValue;
  /** Returns what a persistent id (BINPERSID) stands for. */
  persistentLoad?(pid: PickleValue): PickleValue;
}

const MARK = Symbol('mark');
type StackItem = PickleValue | typeof MARK;

/**
 * The pickle's value. Every length and count is checked against the bytes left before anything
 * is allocated, so the work and memory are bounded by the pickle's own size; `file` names the
 * checkpoint in errors.
 */
export function unpickle(data: Uint8Array, hooks: UnpickleHooks, file = 'checkpoint'): PickleValue {
  return new Unpickler(data, hooks, file).run();
}

/** A state dict nests three or four levels; Python's own recursion limit is 1000. */
const MAX_NESTING = 1000;
/** Items a walk of the value may meet, shared references counted each time: walked in well under a second. */
const MAX_EXPANDED = 1_000_000;
/** Values a pickle may build: a state dict of 15,000 tensors (about 30 values each); at up to 200 bytes a value, about 100 MB. */
const MAX_VALUES = 500_000;

function malformed(file: string, detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `${file} holds a malformed pickle: ${detail}`);
}

class Unpickler {
  private readonly input: PickleInput;
  private made = 0;
  private stack: StackItem[] = [];
  private readonly marks: StackItem[][] = [];
  private readonly memo = new Map<number, PickleValue>();

  constructor(
    data: Uint8Array,
    private readonly hooks: UnpickleHooks,
    private readonly file: string,
  ) {
    this.input = new PickleInput(data, (detail) => this.malformed(detail));
  }

  run(): PickleValue {
    for (;;) {
      const opcode = this.input.byte();
      if (opcode === 0x2e /* STOP */) return this.bounded(this.pop());
      this.step(opcode);
    }
  }

  /**
   * The value, refused when it nests deeper than MAX_NESTING or, its shared references (memo
   * gets, DUP) counted each time they appear, holds more than MAX_EXPANDED items: what reads it
   * afterwards (a config reader, an error message) may then recurse or walk it without bound. A
   * container met again inside itself (a cycle, which pickles allow) is not walked twice.
   */
  private bounded(root: PickleValue): PickleValue {
    const onPath = new Set<object>();
    // A depth-first walk with its own stacks: a value and its depth, or (depth −1) leaving a container.
    const values: PickleValue[] = [root];
    const depths: number[] = [0];
    let seen = 0;
    while (values.length > 0) {
      const value = values.pop() as PickleValue;
      const depth = depths.pop() as number;
      if (depth < 0) {
        onPath.delete(value as object);
        continue;
      }
      const items = value instanceof PickleTuple ? value.items : Array.isArray(value) ? value : value instanceof Map ? [...value.values()] : undefined;
      if (items === undefined || onPath.has(value as object)) continue;
      if (depth >= MAX_NESTING) throw this.malformed(`its values nest more than ${MAX_NESTING} deep`);
      seen += items.length;
      if (seen > MAX_EXPANDED) throw this.malformed(`its values, shared references counted each time, hold more than ${MAX_EXPANDED} items`);
      onPath.add(value as object);
      values.push(value);
      depths.push(-1);
      for (const item of items) {
        values.push(item);
        depths.push(depth + 1);
      }
    }
    return root;
  }

  // One opcode. Grouped as in Python's pickletools.
  private step(op: number): void {
    switch (op) {
      // Framing and protocol.
      case 0x80 /* PROTO */:
        this.input.skip(1);
        return;
      case 0x95 /* FRAME */:
        this.input.skip(8);
        return;
      // Stack manipulation.
      case 0x28 /* MARK */:
        this.counted();
        this.marks.push(this.stack);
        this.stack = [];
        return;
      case 0x30 /* POP */:
        this.pop();
        return;
      case 0x31 /* POP_MARK */:
        this.popMark();
        return;
      case 0x32 /* DUP */:
        this.push(this.top());
        return;
      // Constants and numbers.
      case 0x4e /* NONE */:
        this.push(null);
        return;
      case 0x88 /* NEWTRUE */:
        this.push(true);
        return;
      case 0x89 /* NEWFALSE */:
        this.push(false);
        return;
      case 0x4a /* BININT */:
        this.push(this.input.int32());
        return;
      case 0x4b /* BININT1 */:
        this.push(this.input.byte());
        return;
      case 0x4d /* BININT2 */:
        this.push(this.input.uint16());
        return;
      case 0x8a /* LONG1 */:
        this.push(this.input.longBytes(this.input.byte()));
        return;
      case 0x8b /* LONG4 */:
        this.push(this.input.longBytes(this.input.int32()));
        return;
      case 0x47 /* BINFLOAT */:
        this.push(this.input.float64());
        return;
      case 0x49 /* INT */:
        this.push(this.input.textInt(this.input.line()));
        return;
      case 0x4c /* LONG */:
        this.push(this.input.textInt(this.input.line().replace(/L$/, '')));
        return;
      case 0x46 /* FLOAT */:
        this.push(Number.parseFloat(this.input.line()));
        return;
      // Strings and bytes.
      case 0x58 /* BINUNICODE */:
        this.push(this.input.utf8(this.input.uint32()));
        return;
      case 0x8c /* SHORT_BINUNICODE */:
        this.push(this.input.utf8(this.input.byte()));
        return;
      case 0x8d /* BINUNICODE8 */:
        this.push(this.input.utf8(this.input.u64()));
        return;
      case 0x56 /* UNICODE */:
        this.push(this.input.rawUnicodeLine());
        return;
      case 0x54 /* BINSTRING */:
        this.push(this.input.latin(this.input.int32()));
        return;
      case 0x55 /* SHORT_BINSTRING */:
        this.push(this.input.latin(this.input.byte()));
        return;
      case 0x42 /* BINBYTES */:
        this.push(this.input.bytes(this.input.uint32()));
        return;
      case 0x43 /* SHORT_BINBYTES */:
        this.push(this.input.bytes(this.input.byte()));
        return;
      case 0x8e /* BINBYTES8 */:
        this.push(this.input.bytes(this.input.u64()));
        return;
      // Containers.
      case 0x5d /* EMPTY_LIST */:
        this.push([]);
        return;
      case 0x6c /* LIST */:
        this.push(this.popMark());
        return;
      case 0x61 /* APPEND */:
        {
          const item = this.pop();
          this.listAt().push(item);
          return;
        }
      case 0x65 /* APPENDS */:
        {
          const items = this.popMark();
          const list = this.listAt();
          for (const item of items) list.push(item);
          return;
        }
      case 0x29 /* EMPTY_TUPLE */:
        this.push(new PickleTuple([]));
        return;
      case 0x74 /* TUPLE */:
        this.push(new PickleTuple(this.popMark()));
        return;
      case 0x85 /* TUPLE1 */:
        this.push(new PickleTuple(this.popN(1)));
        return;
      case 0x86 /* TUPLE2 */:
        this.push(new PickleTuple(this.popN(2)));
        return;
      case 0x87 /* TUPLE3 */:
        this.push(new PickleTuple(this.popN(3)));
        return;
      case 0x7d /* EMPTY_DICT */:
        this.push(new Map());
        return;
      case 0x64 /* DICT */:
        {
          const dict = new Map<PickleKey, PickleValue>();
          this.setPairs(dict, this.popMark());
          this.push(dict);
          return;
        }
      case 0x73 /* SETITEM */:
        {
          const [key, value] = this.popN(2);
          this.setPairs(this.dictAt(), [key ?? null, value ?? null]);
          return;
        }
      case 0x75 /* SETITEMS */:
        {
          const items = this.popMark();
          this.setPairs(this.dictAt(), items);
          return;
        }
      case 0x8f /* EMPTY_SET */:
        this.push(new Set());
        return;
      case 0x90 /* ADDITEMS */:
        {
          const items = this.popMark();
          const set = this.top();
          if (!(set instanceof Set)) throw this.malformed('ADDITEMS on a non-set');
          for (const item of items) set.add(this.asKey(item));
          return;
        }
      case 0x91 /* FROZENSET */:
        this.push(new Set(this.popMark().map((item) => this.asKey(item))));
        return;
      // Memo.
      case 0x71 /* BINPUT */:
        this.memo.set(this.input.byte(), this.top());
        return;
      case 0x72 /* LONG_BINPUT */:
        this.memo.set(this.input.uint32(), this.top());
        return;
      case 0x70 /* PUT */:
        this.memo.set(Number.parseInt(this.input.line(), 10), this.top());
        return;
      case 0x94 /* MEMOIZE */:
        this.memo.set(this.memo.size, this.top());
        return;
      case 0x68 /* BINGET */:
        this.push(this.memoGet(this.input.byte()));
        return;
      case 0x6a /* LONG_BINGET */:
        this.push(this.memoGet(this.input.uint32()));
        return;
      case 0x67 /* GET */:
        this.push(this.memoGet(Number.parseInt(this.input.line(), 10)));
        return;
      // Names, calls and persistent ids: only what the hooks allow.
      case 0x63 /* GLOBAL */:
        {
          const module = this.input.line();
          const name = this.input.line();
          this.push(this.hooks.resolveGlobal(module, name));
          return;
        }
      case 0x93 /* STACK_GLOBAL */:
        {
          const [module, name] = this.popN(2);
          if (typeof module !== 'string' || typeof name !== 'string') throw this.malformed('STACK_GLOBAL needs two strings');
          this.push(this.hooks.resolveGlobal(module, name));
          return;
        }
      case 0x52 /* REDUCE */:
        {
          const args = this.pop();
          const callable = this.pop();
          this.push(this.reduce(callable, args));
          return;
        }
      // BUILD sets an object's attributes (a state_dict's `_metadata`, which nothing here reads): dropped.
      case 0x62 /* BUILD */:
        this.pop();
        return;
      case 0x51 /* BINPERSID */:
        this.push(this.persistent(this.pop()));
        return;
      case 0x50 /* PERSID */:
        this.push(this.persistent(this.input.line()));
        return;
      default:
        throw new StemsplitError(
          'MODEL_INVALID',
          `${this.file}: unsupported pickle opcode 0x${op.toString(16).padStart(2, '0')} at byte ${this.input.position - 1}`,
        );
    }
  }

  private reduce(callable: PickleValue, args: PickleValue): PickleValue {
    if (!(args instanceof PickleTuple)) throw this.malformed('REDUCE arguments are not a tuple');
    if (callable instanceof PickleCallable) return callable.call(args.items);
    if (callable instanceof PickleGlobalRef) {
      throw new StemsplitError('MODEL_INVALID', `${this.file}: unsupported class ${callable.qualifiedName} in the checkpoint (cannot be built)`);
    }
    throw this.malformed('REDUCE on a value that is not callable');
  }

  private persistent(pid: PickleValue): PickleValue {
    if (this.hooks.persistentLoad === undefined) throw this.malformed('unexpected persistent id');
    return this.hooks.persistentLoad(pid);
  }

  private push(value: PickleValue): void {
    this.counted();
    this.stack.push(value);
  }

  /** Counts a value or MARK made: what a pickle builds is bounded whatever its size. */
  private counted(): void {
    if (++this.made > MAX_VALUES) throw this.malformed(`it builds more than ${MAX_VALUES} values, more than any checkpoint`);
  }

  private pop(): PickleValue {
    const value = this.stack.pop();
    if (value === undefined || value === MARK) throw this.malformed('stack underflow');
    return value;
  }

  private malformed(detail: string): StemsplitError {
    return malformed(this.file, detail);
  }

  private top(): PickleValue {
    const value = this.stack[this.stack.length - 1];
    if (value === undefined || value === MARK) throw this.malformed('empty stack');
    return value;
  }

  private popN(n: number): PickleValue[] {
    if (this.stack.length < n) throw this.malformed('stack underflow');
    return this.stack.splice(this.stack.length - n, n) as PickleValue[];
  }

  private popMark(): PickleValue[] {
    const items = this.stack as PickleValue[];
    const previous = this.marks.pop();
    if (previous === undefined) throw this.malformed('no MARK on the stack');
    this.stack = previous;
    return items;
  }

  private listAt(): PickleValue[] {
    const list = this.top();
    if (!Array.isArray(list)) throw this.malformed('APPEND on a non-list');
    return list;
  }

  private dictAt(): Map<PickleKey, PickleValue> {
    const dict = this.top();
    if (!(dict instanceof Map)) throw this.malformed('SETITEM on a non-dict');
    return dict;
  }

  private memoGet(index: number): PickleValue {
    const value = this.memo.get(index);
    if (value === undefined) throw this.malformed(`memo ${index} is not set`);
    return value;
  }

  private asKey(value: PickleValue): PickleKey {
    if (value === null || ['string', 'number', 'bigint', 'boolean'].includes(typeof value)) return value as PickleKey;
    throw this.malformed('unhashable dict key or set item');
  }

  private setPairs(dict: Map<PickleKey, PickleValue>, items: readonly PickleValue[]): void {
    if (items.length % 2 !== 0) throw this.malformed('odd number of dict items');
    for (let i = 0; i < items.length; i += 2) dict.set(this.asKey(items[i] ?? null), items[i + 1] ?? null);
  }
}
