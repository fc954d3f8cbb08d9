/**
 * Hostile model files: every case issue 37 lists, by name, and more of each kind (pickle, zip,
 * tensor metadata, yaml, `.onnx`, MDX model data, each family's config, odd paths). A case
 * writes its files into a folder and says which `--model` to give; stemsplit must refuse each
 * in one line naming the file, fast and in bounded memory. `randomCases` (random.ts) mutates the
 * valid files made here.
 */
import { spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdirSync, openSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { attr, DATA_TYPE, nodeProto, OnnxGraph, writeModel, type Value } from '../../../src/onnx/graph.js';
import { ProtoMessage } from '../../../src/onnx/protobuf.js';
import { demucsPackageOps, floats, global, op, pickle, stateDictOps, str, torchFile, u32, zeroBomb, zip, type TensorMeta } from './torch-files.js';

export type HostileKind = 'pickle' | 'zip' | 'tensor' | 'yaml' | 'onnx' | 'model-data' | 'config' | 'path' | 'bag';

/** What to run: the model path (`--model`), and the file a refusal must name when it is another (a yaml, a json). */
export interface HostileFiles {
  readonly model: string;
  readonly names: string;
}

export interface HostileCase {
  readonly name: string;
  readonly kind: HostileKind;
  /** The family whose loader reads it (`models/loaders.ts`' kinds). */
  readonly family: 'demucs' | 'msst' | 'mdx' | 'vr';
  readonly write: (dir: string) => HostileFiles;
}

/** A small valid tensor and its storage, for files whose damage lies elsewhere. */
const GOOD_TENSOR: TensorMeta = { shape: [2, 2], key: '0' };
const GOOD_STORAGE = { '0': floats(4) };

/** A Demucs `.th` whose data.pkl is `pickleBytes` (and the good storage beside it). */
function demucsFile(dir: string, pickleBytes: Uint8Array, storages: Readonly<Record<string, Uint8Array>> = GOOD_STORAGE, name = 'model.th'): HostileFiles {
  const model = join(dir, name);
  writeFileSync(model, torchFile(pickleBytes, storages));
  return { model, names: model };
}

/** A Demucs package whose state holds `tensors`. */
export function demucsPackage(tensors: readonly (readonly [string, TensorMeta])[]): Buffer {
  return pickle(
    demucsPackageOps(stateDictOps(tensors), [
      ...op.emptyDict,
      ...op.mark,
      ...str('sources'),
      ...op.emptyList,
      ...op.mark,
      ...str('vocals'),
      ...str('other'),
      ...op.appends,
      ...op.setitems,
    ]),
  );
}

/** A BS-RoFormer config small enough to convert in a moment: n_fft 16 (9 bins), dim 8, one layer. */
export const SMALL_ROFORMER_YAML = `audio:
  chunk_size: 4410
  num_channels: 2
  sample_rate: 44100
model:
  dim: 8
  depth: 1
  stereo: true
  num_stems: 1
  time_transformer_depth: 1
  freq_transformer_depth: 1
  stft_n_fft: 16
  stft_hop_length: 4
  stft_win_length: 16
  freqs_per_bands: !!python/tuple [4, 5]
  dim_head: 4
  heads: 2
training:
  target_instrument: vocals
  instruments: [vocals, other]
inference:
  num_overlap: 2
`;

/** An MSST checkpoint (`model.ckpt`, a state dict of `tensors`) with `yaml` beside it. */
export function msstFiles(dir: string, yaml: string, body: Uint8Array = pickle(stateDictOps([['mask', GOOD_TENSOR]]))): HostileFiles {
  const model = join(dir, 'model.ckpt');
  writeFileSync(model, torchFile(body, GOOD_STORAGE));
  const config = join(dir, 'model.yaml');
  writeFileSync(config, yaml);
  return { model, names: config };
}

/** MDX-Net model data as UVR writes it, for a model with dim_f 8, dim_t 2^3, n_fft 1024 (the least UVR's hop of 1024 allows). */
export const SMALL_MDX_DATA = { compensate: 1.035, mdx_dim_f_set: 8, mdx_dim_t_set: 3, mdx_n_fft_scale_set: 1024, primary_stem: 'Vocals' };

/** A one-node `.onnx` (input → Identity → output) whose input and output are declared as `shape`. */
export function identityOnnx(file: string, shape: readonly number[] = [1, 4, 8, 8], inputName = 'input', outputName = 'output'): void {
  const graph = new OnnxGraph('hostile');
  graph.output(graph.input(inputName, shape), outputName);
  writeModel(graph.encode(), file);
}

/** An MDX-Net `.onnx` with `data` beside it as `model.json`. */
export function mdxFiles(dir: string, data: unknown = SMALL_MDX_DATA, shape?: readonly number[], inputName?: string): HostileFiles {
  const model = join(dir, 'model.onnx');
  identityOnnx(model, shape, inputName);
  const json = join(dir, 'model.json');
  writeFileSync(json, typeof data === 'string' ? data : JSON.stringify(data));
  return { model, names: model };
}

function mkfifo(path: string): void {
  const result = spawnSync('mkfifo', [path]);
  if (result.status !== 0) throw new Error(`mkfifo ${path} failed: ${result.stderr.toString()}`);
}

/** `bytes` `times` over, filled natively (a loop took 2 s for 3·10⁷ one-byte opcodes, at every import of this file). */
function repeated(bytes: readonly number[], times: number): Uint8Array {
  return Buffer.alloc(bytes.length * times, Uint8Array.from(bytes));
}

function concat(...parts: (readonly number[] | Uint8Array)[]): Uint8Array {
  return Buffer.concat(parts.map((part) => Buffer.from(part)));
}

function yamlCase(name: string, yaml: string): HostileCase {
  return { name, kind: 'yaml', family: 'msst', write: (dir) => msstFiles(dir, yaml) };
}

function configCase(name: string, replace: Readonly<Record<string, string>>): HostileCase {
  return {
    name,
    kind: 'config',
    family: 'msst',
    write: (dir) =>
      msstFiles(
        dir,
        Object.entries(replace).reduce((yaml, [key, value]) => yaml.replace(new RegExp(`^(\\s*${key}:).*$`, 'm'), `$1 ${value}`), SMALL_ROFORMER_YAML),
      ),
  };
}

function modelDataCase(name: string, data: unknown): HostileCase {
  return { name, kind: 'model-data', family: 'mdx', write: (dir) => ({ ...mdxFiles(dir, data), names: join(dir, 'model.json') }) };
}

function tensorCase(name: string, meta: TensorMeta, storages: Readonly<Record<string, Uint8Array>> = GOOD_STORAGE): HostileCase {
  return { name, kind: 'tensor', family: 'demucs', write: (dir) => demucsFile(dir, demucsPackage([['weight', meta]]), storages) };
}

/** A case whose whole `model.th` (or other `name`) is the bytes `make` returns. */
export function fileCase(name: string, kind: HostileKind, make: () => Uint8Array, file = 'model.th'): HostileCase {
  return {
    name,
    kind,
    family: 'demucs',
    write: (dir) => {
      const model = join(dir, file);
      writeFileSync(model, make());
      return { model, names: model };
    },
  };
}

/** A model folder (`--model DIR`) whose model.json `fill` makes; a refusal names the manifest. */
function folderCase(name: string, kind: HostileKind, fill: (manifest: string) => void): HostileCase {
  return {
    name,
    kind,
    family: 'demucs',
    write: (dir) => {
      const folder = join(dir, 'model');
      mkdirSync(folder);
      const manifest = join(folder, 'model.json');
      fill(manifest);
      return { model: folder, names: manifest };
    },
  };
}

function pickleCase(name: string, body: Uint8Array | readonly number[]): HostileCase {
  return { name, kind: 'pickle', family: 'demucs', write: (dir) => demucsFile(dir, pickle(body)) };
}

/** A well-formed small torch file whose zip structure `damage` then breaks. */
function zipCase(name: string, damage: (file: Buffer) => Buffer): HostileCase {
  return fileCase(name, 'zip', () => damage(torchFile(demucsPackage([['weight', GOOD_TENSOR]]), GOOD_STORAGE)));
}

const EOCD = Buffer.from([0x50, 0x4b, 0x05, 0x06]);

/** `file`'s contents moved to `outside` and `file` made a link to it: a model's folder whose file leads out of it. */
export function linkOut(file: string, outside: string): void {
  renameSync(file, outside);
  symlinkSync(outside, file);
}

function tensorShapeOf(shape: readonly number[]): ProtoMessage {
  const dims = new ProtoMessage();
  for (const size of shape) dims.message(1, new ProtoMessage().int(1, size));
  return dims;
}

/**
 * An MDX-Net `.onnx` (input + w → output, `shape`) whose weight `w` is external data at
 * `location`, which ONNX Runtime opens as the session opens.
 */
export function externalDataOnnx(file: string, location: string, shape: readonly number[] = [1, 4, 8, 8]): void {
  const valueInfo = (name: string) =>
    new ProtoMessage().string(1, name).message(2, new ProtoMessage().message(1, new ProtoMessage().int(1, DATA_TYPE.float).message(2, tensorShapeOf(shape))));
  const weight = new ProtoMessage();
  for (const size of shape) weight.int(1, size);
  // TensorProto: data_type, name, external_data {location}, data_location EXTERNAL.
  weight.int(2, DATA_TYPE.float).string(8, 'w').message(13, new ProtoMessage().string(1, 'location').string(2, location)).int(14, 1);
  const graph = new ProtoMessage()
    .message(1, nodeProto('Add', ['input', 'w'], ['output']))
    .string(2, 'hostile')
    .message(5, weight)
    .message(11, valueInfo('input'))
    .message(12, valueInfo('output'));
  writeModel(new ProtoMessage().int(1, 8).message(7, graph).message(8, new ProtoMessage().int(2, 17)), file);
}

/** The issue's list, one case each (the names the regression tests carry). */
export const ISSUE_CASES: readonly HostileCase[] = [
  pickleCase('pickle: LONG4 of 1 MiB', concat([0x8b], u32(1 << 20), new Uint8Array(1 << 20).fill(0x5a))),
  pickleCase('pickle: LONG4 with a negative length', concat([0x8b], u32(-16), [0x4b, 1, 0x2e])),
  tensorCase('tensor: zero strides claiming [50000, 40000]', { shape: [50_000, 40_000], stride: [0, 0], numel: 1, key: '0' }, { '0': floats(1) }),
  fileCase('zip: data.pkl inflating to 10 GiB', 'zip', () => zip([{ name: 'archive/data.pkl', data: zeroBomb(10 * 2 ** 30), method: 8, size: 10 * 2 ** 30 }])),
  {
    name: 'path: a FIFO as the model',
    kind: 'path',
    family: 'demucs',
    write: (dir) => {
      const model = join(dir, 'model.th');
      mkfifo(model);
      return { model, names: model };
    },
  },
  pickleCase('pickle: 10⁶ nested lists', concat(repeated(op.emptyList, 1_000_000), repeated(op.append, 999_999))),
  zipCase('zip: truncated central directory', (file) => {
    // The end record counts one entry more than the directory holds, as when a download was cut and patched.
    const end = file.lastIndexOf(EOCD);
    const out = Buffer.from(file);
    out.writeUInt16LE(out.readUInt16LE(end + 8) + 1, end + 8);
    out.writeUInt16LE(out.readUInt16LE(end + 10) + 1, end + 10);
    return out;
  }),
  fileCase('zip: an entry claiming 10¹¹ bytes', 'zip', () => zip([{ name: 'archive/data.pkl', data: pickle([...op.none]), size: 1e11, compressedSize: 1e11 }])),
  {
    name: 'file: 3,000,000,000 bytes (sparse)',
    kind: 'zip',
    family: 'msst',
    write: (dir) => {
      const files = msstFiles(dir, SMALL_ROFORMER_YAML);
      const fd = openSync(files.model, 'w');
      ftruncateSync(fd, 3_000_000_000);
      closeSync(fd);
      return { model: files.model, names: files.model };
    },
  },
  {
    name: 'onnx: an input with absurd static dimensions',
    kind: 'onnx',
    family: 'mdx',
    write: (dir) => mdxFiles(dir, SMALL_MDX_DATA, [1, 4, 100_000, 100_000]),
  },
  modelDataCase('model data: n_fft 2^30', { ...SMALL_MDX_DATA, mdx_n_fft_scale_set: 2 ** 30 }),
  modelDataCase("model data: n_fft 16, shorter than UVR's hop", { ...SMALL_MDX_DATA, mdx_n_fft_scale_set: 16 }),
  {
    name: 'checkpoint: a weight of the wrong shape',
    kind: 'tensor',
    family: 'msst',
    write: (dir) => {
      const files = msstFiles(dir, SMALL_ROFORMER_YAML, pickle(stateDictOps([['band_split.to_features.0.0.gamma', { shape: [3], key: '0' }]])));
      return { ...files, names: files.model };
    },
  },
  yamlCase('yaml: !!python/object/apply:os.system', SMALL_ROFORMER_YAML.replace('  dim: 8\n', '  dim: !!python/object/apply:os.system ["echo pwned"]\n')),
];

/** More hand-made cases of every kind. */
export const MORE_CASES: readonly HostileCase[] = [
  pickleCase('pickle: GLOBAL os.system called by REDUCE', [...global('os', 'system'), ...str('echo pwned'), 0x85, ...op.reduce]),
  pickleCase('pickle: STACK_GLOBAL builtins.eval', [...str('builtins'), ...str('eval'), 0x93, ...str('1'), 0x85, ...op.reduce]),
  pickleCase('pickle: BINUNICODE claiming 4 GiB', concat([0x58], u32(0xffffffff), [0x61, 0x62])),
  pickleCase('pickle: BINBYTES8 claiming 2^62 bytes', concat([0x8e], [0, 0, 0, 0, 0, 0, 0, 0x40], [1, 2, 3])),
  pickleCase('pickle: APPENDS of 10⁶ items', concat(op.emptyList, op.mark, repeated(op.none, 1_000_000), op.appends)),
  pickleCase('pickle: INT of 10⁶ digits', concat([0x49], Buffer.from('9'.repeat(1_000_000) + '\n', 'latin1'))),
  pickleCase('pickle: LONG_BINGET of a memo never set', [0x6a, ...u32(0xfffffffe)]),
  pickleCase('pickle: 10⁶ MARKs', repeated(op.mark, 1_000_000)),
  pickleCase('pickle: 3·10⁷ EMPTY_DICTs', repeated(op.emptyDict, 30_000_000)),
  pickleCase('pickle: 5,000 nested lists', concat(repeated(op.emptyList, 5000), repeated(op.append, 4999))),
  // L0 = []; L(i+1) = [Li, Li] through the memo: 2^100 items once shared references are followed.
  pickleCase(
    'pickle: a list of itself twice, 100 times over',
    concat(
      op.emptyList,
      [0x94],
      op.pop,
      ...Array.from({ length: 100 }, (_, i) => [...op.emptyList, 0x68, i, ...op.append, 0x68, i, ...op.append, 0x94, ...op.pop]),
      [0x68, 100],
    ),
  ),
  pickleCase('pickle: an unknown opcode', [0xff]),
  {
    name: 'pickle: ends before STOP',
    kind: 'pickle',
    family: 'demucs',
    write: (dir) => demucsFile(dir, Buffer.from([...op.proto, ...op.emptyDict])),
  },
  zipCase('zip: no end of central directory record', (file) => file.subarray(0, file.lastIndexOf(EOCD))),
  zipCase('zip: a local header offset past the end', (file) => {
    const out = Buffer.from(file);
    const central = out.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    out.writeUInt32LE(0x7fffffff, central + 42);
    return out;
  }),
  zipCase('zip: compression method 12 (bzip2)', (file) => {
    const out = Buffer.from(file);
    const central = out.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    out.writeUInt16LE(12, central + 10);
    return out;
  }),
  zipCase('zip: directory offset past the end', (file) => {
    const out = Buffer.from(file);
    out.writeUInt32LE(0xfffffff0, out.lastIndexOf(EOCD) + 16);
    return out;
  }),
  zipCase('zip: 65535 entries claimed', (file) => {
    const out = Buffer.from(file);
    out.writeUInt16LE(0xffff, out.lastIndexOf(EOCD) + 10);
    return out;
  }),
  zipCase('zip: cut in half', (file) => file.subarray(0, file.length >> 1)),
  fileCase('zip: data.pkl claiming 1 KiB, inflating to 1 GiB', 'zip', () =>
    zip([{ name: 'archive/data.pkl', data: zeroBomb(2 ** 30), method: 8, size: 1024 }]),
  ),
  fileCase('zip: no data.pkl', 'zip', () => zip([{ name: 'archive/other', data: Buffer.from('x') }])),
  tensorCase('tensor: its storage entry is missing', { shape: [2, 2], key: '7' }),
  tensorCase('tensor: a negative stride', { shape: [2, 2], stride: [-2, 1], key: '0' }),
  tensorCase('tensor: storage of 2^31 − 1 elements in 16 bytes', { shape: [2, 2], numel: 0x7fffffff, key: '0' }),
  tensorCase('tensor: offset past its storage', { shape: [2, 2], offset: 1_000_000, key: '0' }),
  tensorCase('tensor: a negative dimension', { shape: [-1, 4], stride: [4, 1], key: '0' }),
  tensorCase('tensor: ComplexFloatStorage', { shape: [2, 2], storage: 'ComplexFloatStorage', key: '0' }),
  tensorCase('tensor: 65 dimensions', { shape: Array.from({ length: 65 }, () => 1), key: '0' }),
  yamlCase('yaml: !!python/name:os.system', SMALL_ROFORMER_YAML.replace('  depth: 1\n', '  depth: !!python/name:os.system\n')),
  yamlCase(
    'yaml: !!python/object/new:subprocess.Popen',
    SMALL_ROFORMER_YAML.replace('  heads: 2\n', '  heads: !!python/object/new:subprocess.Popen [["ls"]]\n'),
  ),
  yamlCase('yaml: an unknown tag', SMALL_ROFORMER_YAML.replace('  heads: 2\n', '  heads: !custom 2\n')),
  yamlCase(
    'yaml: a billion laughs of aliases',
    `a: &a [x, x, x, x, x, x, x, x, x]\n${Array.from(
      { length: 9 },
      (_, i) =>
        `${String.fromCharCode(98 + i)}: &${String.fromCharCode(98 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(97 + i)}`)
          .join(', ')}]`,
    ).join('\n')}\n${SMALL_ROFORMER_YAML}`,
  ),
  yamlCase('yaml: 10⁵ nested flow lists', `${SMALL_ROFORMER_YAML}extra: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`),
  yamlCase('yaml: 2·10⁵ nested block lists', `${SMALL_ROFORMER_YAML}extra:\n  ${'- '.repeat(200_000)}x\n`),
  yamlCase('yaml: a 20 MB config', `${SMALL_ROFORMER_YAML}${'# padding padding padding padding padding padding padding\n'.repeat(350_000)}`),
  yamlCase('yaml: not a mapping', '- just\n- a\n- list\n'),
  configCase('config: stft_n_fft 2^30', { stft_n_fft: String(2 ** 30), stft_win_length: String(2 ** 30) }),
  configCase('config: dim 10⁹', { dim: '1000000000' }),
  configCase('config: chunk_size 10¹²', { chunk_size: '1000000000000' }),
  configCase('config: num_overlap 10⁹', { num_overlap: '1000000000' }),
  configCase('config: depth 10⁶', { depth: '1000000' }),
  {
    name: 'config: mel_band_roformer with 10⁶ bands',
    kind: 'config',
    family: 'msst',
    write: (dir) => msstFiles(dir, SMALL_ROFORMER_YAML.replace('  freqs_per_bands: !!python/tuple [4, 5]\n', '  num_bands: 1000000\n')),
  },
  { name: 'onnx: not protobuf', kind: 'onnx', family: 'mdx', write: (dir) => corruptOnnx(dir, () => Buffer.from('this is not an onnx model\n'.repeat(100))) },
  { name: 'onnx: cut in half', kind: 'onnx', family: 'mdx', write: (dir) => corruptOnnx(dir, (bytes) => bytes.subarray(0, bytes.length >> 1)) },
  { name: 'onnx: the input is not named "input"', kind: 'onnx', family: 'mdx', write: (dir) => mdxFiles(dir, SMALL_MDX_DATA, [1, 4, 8, 8], 'x') },
  { name: 'onnx: two channels where MDX-Net has four', kind: 'onnx', family: 'mdx', write: (dir) => mdxFiles(dir, SMALL_MDX_DATA, [1, 2, 8, 8]) },
  modelDataCase('model data: primary_stem escaping the output folder', { ...SMALL_MDX_DATA, primary_stem: '../../escaped' }),
  modelDataCase('model data: compensate is a string', { ...SMALL_MDX_DATA, compensate: 'os.system' }),
  modelDataCase('model data: mdx_dim_t_set 40', { ...SMALL_MDX_DATA, mdx_dim_t_set: 40 }),
  modelDataCase('model data: mdx_dim_f_set 2^31', { ...SMALL_MDX_DATA, mdx_dim_f_set: 2 ** 31 }),
  modelDataCase('model data: 10⁶ nested arrays', '['.repeat(1_000_000) + ']'.repeat(1_000_000)),
  modelDataCase('model data: a 1,000-character stem name', { ...SMALL_MDX_DATA, primary_stem: 'V'.repeat(1000) }),
  {
    name: 'path: /dev/zero behind a .th name',
    kind: 'path',
    family: 'demucs',
    write: (dir) => {
      const model = join(dir, 'zero.th');
      symlinkSync('/dev/zero', model);
      return { model, names: model };
    },
  },
  {
    name: 'path: a link that leads back to itself',
    kind: 'path',
    family: 'demucs',
    write: (dir) => {
      const model = join(dir, 'model.th');
      symlinkSync(model, model);
      return { model, names: model };
    },
  },
  folderCase('model.json: a stem named ../../escaped', 'config', (manifest) => {
    identityOnnx(join(dirname(manifest), 'graph.onnx'), [1, 2, 8], 'mix', 'stems');
    const fields = {
      format: 'stemsplit-model/1',
      name: 'escape',
      description: 'hostile',
      sampleRate: 44100,
      sources: ['../../escaped', 'other'],
      segmentSamples: 8,
      overlap: 0.25,
      normalize: false,
      input: 'waveform',
      onnx: 'graph.onnx',
    };
    writeFileSync(manifest, JSON.stringify(fields));
  }),
  folderCase('path: a model folder whose model.json is a FIFO', 'path', mkfifo),
  folderCase("model.json: its graph a link out of the model's folder", 'path', (manifest) => {
    const graph = join(dirname(manifest), 'graph.onnx');
    identityOnnx(graph, [1, 2, 8], 'mix', 'stems');
    linkOut(graph, join(dirname(manifest), '..', 'outside.onnx'));
    const fields = {
      format: 'stemsplit-model/1',
      name: 'linked',
      description: 'hostile',
      sampleRate: 44100,
      sources: ['vocals', 'other'],
      segmentSamples: 8,
      overlap: 0.25,
      normalize: false,
      input: 'waveform',
      onnx: 'graph.onnx',
    };
    writeFileSync(manifest, JSON.stringify(fields));
  }),
  {
    name: 'path: the yaml beside is a FIFO',
    kind: 'path',
    family: 'msst',
    write: (dir) => {
      const files = msstFiles(dir, '');
      spawnSync('rm', [files.names]);
      mkfifo(files.names);
      return files;
    },
  },
  {
    name: 'path: the model data beside is a FIFO',
    kind: 'path',
    family: 'mdx',
    write: (dir) => {
      const files = mdxFiles(dir);
      const json = join(dir, 'model.json');
      spawnSync('rm', [json]);
      mkfifo(json);
      return { model: files.model, names: json };
    },
  },
  fileCase('bag: a member under !!python/object/apply', 'bag', () => Buffer.from('models:\n- !!python/object/apply:os.system ["echo pwned"]\n'), 'bag.yaml'),
  {
    name: "bag: a member outside the bag's folder",
    kind: 'bag',
    family: 'demucs',
    write: (dir) => {
      const inner = join(dir, 'bag');
      mkdirSync(inner);
      writeFileSync(join(dir, 'outside.th'), torchFile(demucsPackage([['weight', GOOD_TENSOR]]), GOOD_STORAGE));
      const model = join(inner, 'bag.yaml');
      writeFileSync(model, 'models:\n- ../outside\n');
      return { model, names: model };
    },
  },
  {
    name: "model data: a link out of the model's folder",
    kind: 'path',
    family: 'mdx',
    write: (dir) => {
      const folder = join(dir, 'model');
      mkdirSync(folder);
      const files = mdxFiles(folder);
      const json = join(folder, 'model.json');
      linkOut(json, join(dir, 'outside.json'));
      return { model: files.model, names: json };
    },
  },
  {
    name: 'model data: a VR NAME.json that is not JSON',
    kind: 'model-data',
    family: 'vr',
    write: (dir) => {
      const model = join(dir, 'model.pth');
      writeFileSync(model, torchFile(pickle(stateDictOps([['weight', GOOD_TENSOR]])), GOOD_STORAGE));
      const json = join(dir, 'model.json');
      writeFileSync(json, '{"vr_model_param": NaN, "primary_stem": "Instrumental"}');
      return { model, names: json };
    },
  },
  {
    name: "onnx: external data a FIFO in the model's folder",
    kind: 'onnx',
    family: 'mdx',
    write: (dir) => {
      // dim_t 256, the default segment: ONNX Runtime opens the file itself, as the folder's.
      const files = mdxFiles(dir, { ...SMALL_MDX_DATA, mdx_dim_t_set: 8 });
      externalDataOnnx(files.model, 'weights.bin', [1, 4, 8, 256]);
      mkfifo(join(dir, 'weights.bin'));
      return files;
    },
  },
  {
    // Loaded from bytes (its time axis freed for --mdx-segment-size): ONNX Runtime looked in the working directory.
    name: 'onnx: external data named after a file of the working directory',
    kind: 'onnx',
    family: 'mdx',
    write: (dir) => {
      const files = mdxFiles(dir);
      externalDataOnnx(files.model, 'package.json');
      return files;
    },
  },
  {
    name: 'yaml: bytes that are not UTF-8',
    kind: 'yaml',
    family: 'msst',
    write: (dir) => {
      const files = msstFiles(dir, SMALL_ROFORMER_YAML);
      writeFileSync(files.names, concat(Buffer.from(`${SMALL_ROFORMER_YAML}extra: "`), [0xff, 0xfe], Buffer.from('"\n')));
      return files;
    },
  },
  {
    // Valid model data but for one byte in a key no one reads: it loaded, the byte read as U+FFFD.
    name: 'model data: bytes that are not UTF-8',
    kind: 'model-data',
    family: 'mdx',
    write: (dir) => {
      const files = mdxFiles(dir);
      const json = join(dir, 'model.json');
      writeFileSync(json, concat(Buffer.from(JSON.stringify(SMALL_MDX_DATA).replace(/}$/, ', "note": "caf')), [0xe9], Buffer.from('"}')));
      return { model: files.model, names: json };
    },
  },
];

/**
 * Files whose shapes are as declared and whose graph fails only as it runs: MDX-Net's trial run on
 * silence refuses them as they load (mdx/engine.ts), and a split of real audio names them too
 * (through the CLI alone here). The refusal must name the file, exit 13, alone on stderr.
 */
export const RUN_TIME_CASES: readonly HostileCase[] = [
  mdxGraphCase('onnx: a graph that fails as it runs (ConstantOfShape of [2^32, 2^32])', (graph, input) => {
    const huge = graph.op('ConstantOfShape', [graph.ints([2 ** 32, 2 ** 32])], [2 ** 32, 2 ** 32]);
    const total = graph.op('ReduceSum', [huge], [], { keepdims: attr.int(0) });
    return graph.op('Add', [input, total], [1, 4, 8, 8]);
  }),
  mdxGraphCase('onnx: a graph that gives NaN (the input divided by itself)', (graph, input) => graph.op('Div', [input, input], [1, 4, 8, 8])),
];

/** An MDX-Net model whose graph of the contract's shapes ([1, 4, 8, 8] in and out) is `output` of its input. */
function mdxGraphCase(name: string, output: (graph: OnnxGraph, input: Value) => Value): HostileCase {
  return {
    name,
    kind: 'onnx',
    family: 'mdx',
    write: (dir) => {
      const files = mdxFiles(dir);
      const graph = new OnnxGraph('hostile');
      graph.output(output(graph, graph.input('input', [1, 4, 8, 8])), 'output');
      writeModel(graph.encode(), files.model);
      return files;
    },
  };
}

function corruptOnnx(dir: string, damage: (bytes: Buffer) => Buffer): HostileFiles {
  const files = mdxFiles(dir);
  writeFileSync(files.model, damage(readFileSync(files.model)));
  return files;
}

export const ALL_CASES: readonly HostileCase[] = [...ISSUE_CASES, ...MORE_CASES];
