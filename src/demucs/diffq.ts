/**
 * diffq-quantized Demucs states (`mdx_q`, `mdx_extra_q`): demucs/states.py stores
 * `DiffQuantizer.get_quantized_state()` (facebookresearch/diffq) instead of a state_dict:
 *
 * - the model's parameters in `named_parameters` order, without names: each with at most
 *   ⌊min_size · 2²⁰ / 4⌋ elements is the next of `others` (float32, as is; `float16` when the
 *   quantizer was made with float16), each larger one the next of `quantized`;
 * - a quantized parameter is `(levels_by_width, (mn, mx), packed_widths)`: per group of
 *   `group_size` consecutive weights a width b (stored as b − min_bits), and the groups'
 *   levels packed per width; weight = level / (2^b − 1) · (mx − mn) + mn, in float32.
 *
 * Bit packing (diffq/bitpack.pyx): int64 words [lines, nbits, 32] read as unsigned; value
 * p = line·2048 + j·32 + i has its bit k at bit j of word [line, k, i].
 */
import { StemsplitError } from '../errors.js';
import { LoadedTensor, type CheckpointTensor } from '../torch/checkpoint.js';
import { PickleTuple, type PickleValue } from '../torch/pickle-values.js';
import type { ParameterShapes } from './v3-parameters.js';

/** An int64 tensor's words exactly as stored. */
export interface PackedWords {
  readonly shape: readonly number[];
  readonly words: BigInt64Array;
}

export interface QuantizedParameter {
  /** Index b − 1 packs the levels of the groups of width b (b = 1..14); null where none has it. */
  readonly levels: readonly (PackedWords | null)[];
  readonly min: number;
  readonly max: number;
  readonly widths: PackedWords;
}

export interface DiffqState {
  readonly quantized: readonly QuantizedParameter[];
  readonly others: readonly CheckpointTensor[];
  readonly float16: readonly CheckpointTensor[];
  /** DiffQuantizer's constructor arguments that decide the layout. */
  readonly minSize: number;
  readonly groupSize: number;
  readonly minBits: number;
  readonly useFloat16: boolean;
}

/** DiffQuantizer's defaults, for what a state's `init_kwargs` leave out. */
const DEFAULTS = { min_size: 0.01, group_size: 1, min_bits: 2, float16: false } as const;
/** Widths 1..14 (bitpack's `_bit_pack_param` packs levels per width in that range). */
const WIDTHS = 14;

/** The state demucs stored (`{quantized, float16, others, meta, __quantized}`, tensors loaded). */
export function readDiffqState(tree: PickleValue | undefined): DiffqState {
  const root = dict(tree, 'the state');
  const meta = dict(root.get('meta'), '`meta`');
  if (meta.get('packed') !== true || meta.get('torch_pack') === true) throw invalid('only bit-packed states (packed=True, torch_pack=False) are read');
  const init = dict(meta.get('init_kwargs') ?? new Map(), '`init_kwargs`');
  const option = <T extends number | boolean>(name: keyof typeof DEFAULTS): T => {
    const value = init.get(name) ?? DEFAULTS[name];
    if (typeof value !== typeof DEFAULTS[name]) throw invalid(`init_kwargs ${name} = ${String(value)}`);
    return value as T;
  };
  return {
    quantized: list(root.get('quantized'), '`quantized`').map(quantizedParameter),
    others: list(root.get('others'), '`others`').map((item) => tensor(item, 'an `others` entry')),
    float16: list(root.get('float16') ?? [], '`float16`').map((item) => tensor(item, 'a `float16` entry')),
    minSize: option('min_size'),
    groupSize: option('group_size'),
    minBits: option('min_bits'),
    useFloat16: option('float16'),
  };
}

function quantizedParameter(item: PickleValue): QuantizedParameter {
  const parts = item instanceof PickleTuple ? item.items : Array.isArray(item) ? item : [];
  const [levels, scales, widths] = parts;
  const bounds = scales instanceof PickleTuple ? scales.items : Array.isArray(scales) ? scales : [];
  const [min, max] = bounds;
  const perWidth = list(levels ?? null, "a quantized entry's levels");
  if (parts.length !== 3 || typeof min !== 'number' || typeof max !== 'number' || perWidth.length !== WIDTHS) {
    throw invalid('a quantized entry is not (levels by width, (min, max), widths)');
  }
  return { levels: perWidth.map((packed) => (packed === null ? null : words(packed))), min, max, widths: words(widths ?? null) };
}

function dict(value: PickleValue | undefined, what: string): Map<PickleValue, PickleValue> {
  if (value instanceof Map) return value as Map<PickleValue, PickleValue>;
  throw invalid(`${what} is not a dict`);
}

function list(value: PickleValue | undefined, what: string): readonly PickleValue[] {
  if (Array.isArray(value)) return value;
  if (value instanceof PickleTuple) return value.items;
  throw invalid(`${what} is not a list`);
}

function tensor(value: PickleValue, what: string): CheckpointTensor {
  if (value instanceof LoadedTensor) return value.tensor;
  throw invalid(`${what} is not a tensor`);
}

function words(value: PickleValue): PackedWords {
  const loaded = tensor(value, 'packed bits');
  if (loaded.words === undefined) throw invalid('packed bits are not a contiguous int64 tensor');
  return { shape: loaded.shape, words: loaded.words };
}

const BLOCK = 32;
const STORAGE_BITS = 64;

/** The first `count` values packed in `packed` (bitpack.unpack). */
export function unpackBits(packed: PackedWords, count: number): Int32Array {
  const [lines, bits, block] = packed.shape as [number, number, number];
  if (packed.shape.length !== 3 || block !== BLOCK || packed.words.length !== lines * bits * block) {
    throw invalid(`packed bits of shape [${packed.shape.join(', ')}]`);
  }
  if (count > lines * BLOCK * STORAGE_BITS) throw invalid(`${count} values from ${lines * BLOCK * STORAGE_BITS} packed`);
  const out = new Int32Array(count);
  for (let line = 0; line < lines; line++) {
    for (let k = 0; k < bits; k++) {
      for (let i = 0; i < BLOCK; i++) {
        const word = BigInt.asUintN(64, packed.words[(line * bits + k) * BLOCK + i] as bigint);
        if (word === 0n) continue;
        // Split the word into two 32-bit halves: bit j of the word is value line·2048 + j·32 + i.
        const low = Number(word & 0xffffffffn);
        const high = Number(word >> 32n);
        for (let j = 0; j < STORAGE_BITS; j++) {
          const set = j < 32 ? (low >>> j) & 1 : (high >>> (j - 32)) & 1;
          if (set === 0) continue;
          const p = line * BLOCK * STORAGE_BITS + j * BLOCK + i;
          if (p < count) out[p] = (out[p] as number) | (1 << k);
        }
      }
    }
  }
  return out;
}

/** The quantized state as a state_dict, named by the model's parameters in construction order. */
export function dequantizeState(state: DiffqState, parameters: ParameterShapes): Map<string, CheckpointTensor> {
  const limit = Math.floor((state.minSize * 2 ** 20) / 4);
  const small = state.useFloat16 ? [...state.float16] : [...state.others];
  const large = [...state.quantized];
  const out = new Map<string, CheckpointTensor>();
  for (const [name, shape] of parameters) {
    const count = shape.reduce((a, b) => a * b, 1);
    if (count <= limit) {
      const tensor = small.shift();
      if (tensor === undefined || tensor.data.length !== count) throw invalid(`no stored tensor of ${count} values for ${name}`);
      out.set(name, { shape, data: tensor.data });
    } else {
      const quantized = large.shift();
      if (quantized === undefined) throw invalid(`no quantized tensor for ${name}`);
      out.set(name, { shape, data: dequantize(quantized, count, state.groupSize, state.minBits, name) });
    }
  }
  if (small.length > 0 || large.length > 0) throw invalid(`${small.length + large.length} stored tensors more than the model has`);
  return out;
}

function dequantize(parameter: QuantizedParameter, count: number, groupSize: number, minBits: number, name: string): Float32Array {
  if (groupSize < 1 || count % groupSize !== 0) throw invalid(`${name}: ${count} weights do not fill groups of ${groupSize}`);
  const groups = count / groupSize;
  const widths = unpackBits(parameter.widths, groups).map((width) => width + minBits);
  const range = Math.fround(parameter.max - parameter.min);
  const min = Math.fround(parameter.min);
  const out = new Float32Array(count);
  for (const [index, packed] of parameter.levels.entries()) {
    const bits = index + 1;
    const members: number[] = [];
    widths.forEach((width, group) => width === bits && members.push(group));
    if (members.length === 0) continue;
    if (packed === null) throw invalid(`${name}: no levels for its ${members.length} groups of width ${bits}`);
    const levels = unpackBits(packed, members.length * groupSize);
    const unit = Math.fround(1 / Math.fround(2 ** bits - 1));
    members.forEach((group, g) => {
      for (let i = 0; i < groupSize; i++) {
        const level = levels[g * groupSize + i] as number;
        out[group * groupSize + i] = Math.fround(Math.fround(Math.fround(level * unit) * range) + min);
      }
    });
  }
  if (widths.some((width) => width < 1 || width > parameter.levels.length)) throw invalid(`${name}: a group width outside 1..${parameter.levels.length}`);
  return out;
}

function invalid(detail: string): StemsplitError {
  return new StemsplitError('MODEL_INVALID', `diffq-quantized state: ${detail}`);
}
