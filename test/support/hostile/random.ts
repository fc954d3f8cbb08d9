/**
 * Seeded random hostile model files: the valid small files of cases.ts, mutated (bytes flipped,
 * cut, spliced; header fields and tensor metadata set to extreme values; yaml and json values
 * replaced by tags, huge numbers and wrong types; each family's config knobs pushed to extremes).
 * The same seed gives the same files. A mutation may leave a file valid: such a case loads and
 * counts as accepted, which is fine; what matters is that nothing else happens.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  demucsPackage,
  fileCase,
  identityOnnx,
  mdxFiles,
  msstFiles,
  SMALL_MDX_DATA,
  SMALL_ROFORMER_YAML,
  type HostileCase,
  type HostileKind,
} from './cases.js';
import { seededRandom } from '../reliability/common.js';
import { demucsPackageOps, floats, global, int, op, pickle, stateDictOps, str, torchFile, u32, type TensorMeta } from './torch-files.js';

class Dice {
  constructor(readonly next: () => number) {}

  below(n: number): number {
    return Math.floor(this.next() * n);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.below(items.length)] as T;
  }
}

/** Integers that break readers: zero, signs, powers of two and their neighbours, the float-exact limit. */
const EXTREME_INTS = [0, 1, -1, 2, 3, 7, 255, 256, 65_535, 65_536, 2 ** 31 - 1, -(2 ** 31), 2 ** 32 - 1, 2 ** 32, 2 ** 40, 2 ** 53, 1e12, 50_000];
/** What a yaml or json value may be replaced by. */
const YAML_VALUES = [
  '!!python/object/apply:os.system ["echo pwned"]',
  '!!python/name:os.system',
  '!!python/module:os',
  '!!python/object:__main__.X {}',
  '!custom 1',
  '-1',
  '0',
  '1e300',
  '.nan',
  '.inf',
  '2147483648',
  '1099511627776',
  '"string"',
  'null',
  'true',
  '[]',
  '{}',
  '[[[[[[]]]]]]',
  '*nowhere',
  '&a [*a]',
  '!!binary AAAA',
  '!!python/tuple [1, 2]',
  '0.5',
  '!!float 1e999',
  '!!int "x"',
];
const JSON_VALUES: readonly unknown[] = [
  null,
  true,
  'x',
  '',
  -1,
  0,
  0.5,
  1e308,
  2 ** 31,
  2 ** 53,
  [],
  {},
  [1, 2],
  'Vocals/../..',
  'A'.repeat(300),
  '\u0000',
  'No Vocals',
  6144,
  2048,
  8,
];

/** Each family's config knobs: the keys a mutation pushes to extremes. */
const ROFORMER_KEYS = [
  'dim',
  'depth',
  'num_stems',
  'stft_n_fft',
  'stft_hop_length',
  'stft_win_length',
  'dim_head',
  'heads',
  'chunk_size',
  'num_overlap',
  'sample_rate',
  'time_transformer_depth',
  'freq_transformer_depth',
];

const SCNET_YAML = `audio:
  chunk_size: 88200
  num_channels: 2
  sample_rate: 44100
model:
  sources: [vocals, other]
  audio_channels: 2
  dims: [4, 8, 8, 8]
  nfft: 64
  hop_size: 16
  win_size: 64
  normalized: true
  band_SR: [0.175, 0.392, 0.433]
  band_stride: [1, 4, 16]
  band_kernel: [3, 4, 16]
  conv_depths: [1, 1, 1]
  compress: 4
  conv_kernel: 3
  num_dplayer: 1
  expand: 1
training:
  instruments: [vocals, other]
inference:
  num_overlap: 2
`;
const SCNET_KEYS = ['chunk_size', 'audio_channels', 'nfft', 'hop_size', 'win_size', 'compress', 'conv_kernel', 'num_dplayer', 'expand', 'num_overlap'];

const MDX23C_YAML = `audio:
  chunk_size: 31744
  dim_f: 64
  dim_t: 32
  hop_length: 1024
  n_fft: 128
  num_channels: 2
  sample_rate: 44100
model:
  act: gelu
  bottleneck_factor: 4
  growth: 8
  norm: InstanceNorm
  num_blocks_per_scale: 1
  num_channels: 8
  num_scales: 2
  num_subbands: 4
  scale: [2, 2]
training:
  instruments: [vocals, other]
  target_instrument: null
inference:
  dim_t: 32
  num_overlap: 4
`;
const MDX23C_KEYS = [
  'chunk_size',
  'dim_f',
  'dim_t',
  'hop_length',
  'n_fft',
  'num_channels',
  'bottleneck_factor',
  'growth',
  'num_blocks_per_scale',
  'num_scales',
  'num_subbands',
];

/** HTDemucs' constructor options, which a Demucs package carries as `kwargs`. */
const DEMUCS_KWARGS = [
  'audio_channels',
  'channels',
  'growth',
  'nfft',
  'depth',
  'kernel_size',
  'stride',
  'context',
  't_layers',
  't_heads',
  'bottom_channels',
  'samplerate',
  'segment',
];

function mutateBytes(dice: Dice, bytes: Uint8Array): Buffer {
  let out = Buffer.from(bytes);
  for (let round = 1 + dice.below(4); round > 0 && out.length > 0; round--) {
    const at = dice.below(out.length);
    switch (dice.below(5)) {
      case 0:
        out[at] = dice.below(256);
        break;
      case 1:
        out = out.subarray(0, at);
        break;
      case 2:
        out = Buffer.concat([out.subarray(0, at), out.subarray(at, at + 1 + dice.below(64)), out.subarray(at)]);
        break;
      case 3:
        out = Buffer.concat([out.subarray(0, at), out.subarray(Math.min(out.length, at + 1 + dice.below(16)))]);
        break;
      default: {
        const value = Buffer.alloc(4);
        value.writeUInt32LE(dice.pick(EXTREME_INTS) >>> 0);
        out = Buffer.concat([out.subarray(0, at), value, out.subarray(Math.min(out.length, at + 4))]);
      }
    }
  }
  return out;
}

/** A pickle opcode with extreme arguments, to splice into a valid pickle. */
function extremeOpcode(dice: Dice): number[] {
  const n = dice.pick(EXTREME_INTS);
  switch (dice.below(9)) {
    case 0:
      return [0x8b, ...u32(n)];
    case 1:
      return [0x58, ...u32(n)];
    case 2:
      return [0x42, ...u32(n)];
    case 3:
      return [0x6a, ...u32(n)];
    case 4:
      return [0x72, ...u32(n)];
    case 5:
      return [0x49, ...Buffer.from(`${n}\n`)];
    case 6:
      return global(
        dice.pick(['os', 'builtins', 'subprocess', 'torch', 'torch._utils', 'collections']),
        dice.pick(['system', 'eval', 'Popen', 'FloatStorage', '_rebuild_tensor_v2', 'OrderedDict']),
      );
    case 7:
      return [...op.mark, ...op.mark, ...op.tuple, ...op.reduce];
    default:
      return [dice.below(256)];
  }
}

function tensorMeta(dice: Dice): TensorMeta {
  const dims = dice.below(5);
  const shape = Array.from({ length: dims }, () => (dice.below(3) === 0 ? dice.pick(EXTREME_INTS) : 1 + dice.below(4)));
  const meta: TensorMeta = { shape, key: dice.below(4) === 0 ? String(dice.below(3)) : '0' };
  const choice = dice.below(5);
  if (choice === 0) return { ...meta, stride: shape.map(() => dice.pick(EXTREME_INTS)) };
  if (choice === 1) return { ...meta, offset: dice.pick(EXTREME_INTS) };
  if (choice === 2) return { ...meta, numel: dice.pick(EXTREME_INTS) };
  if (choice === 3)
    return { ...meta, storage: dice.pick(['HalfStorage', 'DoubleStorage', 'LongStorage', 'BoolStorage', 'ComplexFloatStorage', 'UntypedStorage']) };
  return meta;
}

/** `key: value` lines of `yaml` with the value of `key` (or a random line) replaced. */
function mutateYaml(dice: Dice, yaml: string, keys: readonly string[]): string {
  const lines = yaml.split('\n');
  for (let round = 1 + dice.below(2); round > 0; round--) {
    const key = dice.pick(keys);
    const at = dice.below(3) === 0 ? dice.below(lines.length) : lines.findIndex((line) => line.trimStart().startsWith(`${key}:`));
    if (at < 0) continue;
    const line = lines[at] as string;
    const indent = /^\s*/.exec(line)?.[0] ?? '';
    const name = line.includes(':') ? line.slice(0, line.indexOf(':')).trim() : key;
    const value = dice.below(2) === 0 ? String(dice.pick(EXTREME_INTS)) : dice.pick(YAML_VALUES);
    lines[at] = `${indent}${name}: ${value}`;
  }
  return lines.join('\n');
}

function randomCase(dice: Dice, index: number, seed: number): HostileCase {
  const kind = dice.pick<HostileKind>(['pickle', 'zip', 'tensor', 'yaml', 'onnx', 'model-data', 'config', 'config', 'config']);
  const name = `random ${kind} #${index} (seed ${seed})`;
  const demucs = (make: () => Uint8Array): HostileCase => fileCase(name, kind, make);
  const goodState: readonly (readonly [string, TensorMeta])[] = [['weight', { shape: [2, 2], key: '0' }]];
  switch (kind) {
    case 'pickle': {
      const base = demucsPackage(goodState);
      const splice = dice.below(2) === 0;
      const at = dice.below(base.length);
      const body = splice ? Buffer.concat([base.subarray(0, at), Buffer.from(extremeOpcode(dice)), base.subarray(at)]) : mutateBytes(dice, base);
      return demucs(() => torchFile(body, { '0': floats(4) }));
    }
    case 'zip':
      return demucs(() => mutateBytes(dice, torchFile(demucsPackage(goodState), { '0': floats(4) })));
    case 'tensor': {
      const meta = tensorMeta(dice);
      const storageBytes = dice.pick([0, 4, 16, 64, 4096]);
      return demucs(() => torchFile(demucsPackage([['weight', meta]]), { '0': floats(storageBytes / 4), '1': floats(1) }));
    }
    case 'yaml':
      return { name, kind, family: 'msst', write: (dir) => msstFiles(dir, mutateYaml(dice, SMALL_ROFORMER_YAML, ROFORMER_KEYS)) };
    case 'onnx': {
      const mutate = dice.below(2) === 0;
      const shape = [1, 4, 8, 8].map((dim) => (dice.below(3) === 0 ? dice.pick([0, 1, 2, 4, 8, 100_000, 2 ** 31 - 1]) : dim));
      return {
        name,
        kind,
        family: 'mdx',
        write: (dir) => {
          const files = mdxFiles(dir, SMALL_MDX_DATA);
          if (mutate) writeFileSync(files.model, mutateBytes(dice, readFileSync(files.model)));
          else identityOnnx(files.model, shape);
          return files;
        },
      };
    }
    case 'model-data': {
      const data: Record<string, unknown> = { ...SMALL_MDX_DATA };
      const key = dice.pick([...Object.keys(SMALL_MDX_DATA), 'is_karaoke', 'config_yaml']);
      if (dice.below(4) === 0) delete data[key];
      else data[key] = dice.pick(JSON_VALUES);
      return { name, kind, family: 'mdx', write: (dir) => ({ ...mdxFiles(dir, data), names: join(dir, 'model.json') }) };
    }
    default: {
      const family = dice.below(4);
      if (family === 3) {
        const kwargs = [
          ...op.emptyDict,
          ...op.mark,
          ...str('sources'),
          ...op.emptyList,
          ...op.mark,
          ...str('vocals'),
          ...str('other'),
          ...op.appends,
          ...str(dice.pick(DEMUCS_KWARGS)),
          ...int(dice.pick(EXTREME_INTS) | 0),
          ...op.setitems,
        ];
        return demucs(() => torchFile(pickle(demucsPackageOps(stateDictOps(goodState), kwargs)), { '0': floats(4) }));
      }
      const [yaml, keys] = (
        [
          [SMALL_ROFORMER_YAML, ROFORMER_KEYS],
          [SCNET_YAML, SCNET_KEYS],
          [MDX23C_YAML, MDX23C_KEYS],
        ] as const
      )[family] as readonly [string, readonly string[]];
      return { name, kind, family: 'msst', write: (dir) => msstFiles(dir, mutateYaml(dice, yaml, keys), pickle(stateDictOps(goodState))) };
    }
  }
}

/** `count` random hostile cases from `seed`; each case draws from its own generator, so case i is the same whatever runs before it. */
export function randomCases(seed: number, count: number): HostileCase[] {
  return Array.from({ length: count }, (_, index) => randomCase(new Dice(seededRandom(seed * 100_003 + index)), index, seed));
}
