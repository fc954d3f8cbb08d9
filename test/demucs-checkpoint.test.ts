/**
 * The checkpoint reader: zip, unpickler, fp16 storages, HTDemucs options, bag files.
 * Real fixtures from ../shared/fixtures/demucs, plus small checkpoints written byte by
 * byte here to reach the error paths.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { deflateRawSync } from 'node:zlib';
import { convertCheckpoint, parseBagFile, parseHTDemucsConfig, PyFraction, DEMUCS_CLASS_MODULES, readDemucsCheckpoint } from '../src/demucs/index.js';
import { buildHTDemucsGraph } from '../src/demucs/htdemucs-graph.js';
import { checkCheckpoint, readCheckpoint } from '../src/torch/checkpoint.js';
import { unpickle } from '../src/torch/pickle.js';
import { PickleTuple } from '../src/torch/pickle-values.js';
import { rejectsWith } from './support/assertions.js';
import { fixtureDir } from './support/fixtures.js';

const FIXTURES = fixtureDir('demucs') ?? '';
const skip = FIXTURES === '' ? 'no fixtures' : false;
const fixtures = (skip ? { fixtures: {} } : JSON.parse(readFileSync(path.join(FIXTURES, 'fixtures.json'), 'utf8'))) as {
  fixtures: Record<string, { checkpoint?: string; sha256?: string; params?: number; segment_samples?: number; sources: string[] }>;
};
const scratch = mkdtempSync(path.join(tmpdir(), 'stemsplit-demucs-ckpt-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

// ---- A tiny pickle and zip writer, so tests can build checkpoints the reader must reject.

const op = {
  proto: [0x80, 2],
  emptyDict: [0x7d],
  emptyTuple: [0x29],
  emptyList: [0x5d],
  mark: [0x28],
  setitems: [0x75],
  appends: [0x65],
  tuple: [0x74],
  reduce: [0x52],
  binpersid: [0x51],
  newfalse: [0x89],
  stop: [0x2e],
};

function str(text: string): number[] {
  const bytes = Buffer.from(text, 'utf8');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.length);
  return [0x58, ...length, ...bytes];
}

function int(value: number): number[] {
  const bytes = Buffer.alloc(4);
  bytes.writeInt32LE(value);
  return [0x4a, ...bytes];
}

function global(module: string, name: string): number[] {
  return [0x63, ...Buffer.from(`${module}\n${name}\n`, 'latin1')];
}

/** A float16 tensor of `count` values stored as storage `key`. */
function halfTensor(key: string, shape: number[]): number[] {
  const count = shape.reduce((a, b) => a * b, 1);
  const strides = shape.map((_, i) => shape.slice(i + 1).reduce((a, b) => a * b, 1));
  return [
    ...global('torch._utils', '_rebuild_tensor_v2'),
    ...op.mark,
    ...op.mark,
    ...str('storage'),
    ...global('torch', 'HalfStorage'),
    ...str(key),
    ...str('cpu'),
    ...int(count),
    ...op.tuple,
    ...op.binpersid,
    ...int(0),
    ...op.mark,
    ...shape.flatMap(int),
    ...op.tuple,
    ...op.mark,
    ...strides.flatMap(int),
    ...op.tuple,
    ...op.newfalse,
    ...global('collections', 'OrderedDict'),
    ...op.emptyTuple,
    ...op.reduce,
    ...op.tuple,
    ...op.reduce,
  ];
}

interface PackageParts {
  klass?: [string, string];
  kwargs?: number[];
  state?: number[];
}

function packagePickle(parts: PackageParts): Uint8Array {
  const [module, name] = parts.klass ?? ['demucs.htdemucs', 'HTDemucs'];
  return Uint8Array.from([
    ...op.proto,
    ...op.emptyDict,
    ...op.mark,
    ...str('klass'),
    ...global(module, name),
    ...str('args'),
    ...op.emptyTuple,
    ...str('kwargs'),
    ...op.emptyDict,
    ...op.mark,
    ...(parts.kwargs ?? []),
    ...op.setitems,
    ...str('state'),
    ...op.emptyDict,
    ...op.mark,
    ...(parts.state ?? []),
    ...op.setitems,
    ...op.setitems,
    ...op.stop,
  ]);
}

function sourcesKwarg(): number[] {
  return [...str('sources'), ...op.emptyList, ...op.mark, ...['drums', 'bass', 'other', 'vocals'].flatMap(str), ...op.appends];
}

/** A zip as torch writes it (stored entries), optionally deflating the entries. */
function writeZip(file: string, entries: Record<string, Uint8Array>, deflate = false): void {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const [name, data] of Object.entries(entries)) {
    const nameBytes = Buffer.from(name);
    const stored = deflate ? deflateRawSync(data) : Buffer.from(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(deflate ? 8 : 0, 8);
    local.writeUInt32LE(stored.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(deflate ? 8 : 0, 10);
    central.writeUInt32LE(stored.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, stored);
    centrals.push(central, nameBytes);
    offset += 30 + nameBytes.length + stored.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Object.keys(entries).length, 8);
  end.writeUInt16LE(Object.keys(entries).length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  writeFileSync(file, Buffer.concat([...locals, directory, end]));
}

function checkpointFile(name: string, parts: PackageParts, storages: Record<string, Uint8Array> = {}, deflate = false): string {
  const file = path.join(scratch, `${name}.th`);
  const entries: Record<string, Uint8Array> = { 'archive/data.pkl': packagePickle(parts) };
  for (const [key, data] of Object.entries(storages)) entries[`archive/data/${key}`] = data;
  writeZip(file, entries, deflate);
  return file;
}

describe('demucs checkpoint reader', () => {
  it('reads every fixture checkpoint: class, options, all parameters', () => {
    for (const [name, fixture] of Object.entries(fixtures.fixtures)) {
      if (fixture.checkpoint === undefined) continue;
      const file = path.join(FIXTURES, fixture.checkpoint);
      assert.equal(createHash('sha256').update(readFileSync(file)).digest('hex'), fixture.sha256, name);
      const checkpoint = readDemucsCheckpoint(file);
      assert.equal(checkpoint.klass, 'demucs.htdemucs.HTDemucs');
      let params = 0;
      for (const tensor of checkpoint.state.values()) {
        assert.equal(
          tensor.data.length,
          tensor.shape.reduce((a, b) => a * b, 1),
        );
        assert.ok(tensor.data.every(Number.isFinite));
        params += tensor.data.length;
      }
      assert.equal(params, fixture.params, name);
      const config = parseHTDemucsConfig(checkpoint.kwargs);
      assert.deepEqual(config.sources, fixture.sources);
      assert.equal(config.segmentSamples, fixture.segment_samples, name);
    }
  });

  it('reads segment as a Fraction and as a float', { skip }, () => {
    const fraction = readDemucsCheckpoint(path.join(FIXTURES, 'htdemucs_small.th')).kwargs.get('segment');
    assert.ok(fraction instanceof PyFraction);
    assert.deepEqual([fraction.numerator, fraction.denominator], [39, 5]);
    assert.equal(readDemucsCheckpoint(path.join(FIXTURES, 'htdemucs_6s_small.th')).kwargs.get('segment'), 7.8);
  });

  it('decodes float16 storages exactly, from stored and deflated entries', () => {
    // 1, −2, 65504 (largest half), 2^−24 (smallest subnormal), −0, 0.333251953125
    const halves = [0x3c00, 0xc000, 0x7bff, 0x0001, 0x8000, 0x3555];
    const expected = [1, -2, 65504, 2 ** -24, -0, 0.333251953125];
    const storage = Buffer.alloc(2 * halves.length);
    halves.forEach((h, i) => storage.writeUInt16LE(h, 2 * i));
    for (const deflate of [false, true]) {
      const file = checkpointFile(`half-${deflate}`, { kwargs: sourcesKwarg(), state: [...str('w'), ...halfTensor('0', [2, 3])] }, { '0': storage }, deflate);
      const tensor = readDemucsCheckpoint(file).state.get('w');
      assert.deepEqual(tensor?.shape, [2, 3]);
      assert.deepEqual(Array.from(tensor?.data ?? []), expected);
    }
  });

  it('names an unknown class anywhere in the pickle', async () => {
    const file = checkpointFile('os-system', { kwargs: [...sourcesKwarg(), ...str('evil'), ...global('os', 'system')] });
    await rejectsWith(() => readDemucsCheckpoint(file), 'MODEL_INVALID', /unsupported class os\.system in checkpoint/);
  });

  it("allows the classes of the caller's modules only, whole module names (torch/ allows none of its own)", async () => {
    const own = checkpointFile('own-class', { klass: ['other.models', 'Net'], kwargs: sourcesKwarg() });
    assert.equal(readCheckpoint(own, ['other']).klass, 'other.models.Net');
    assert.equal(readCheckpoint(own, ['other.models']).klass, 'other.models.Net');
    for (const modules of [[], ['othe'], ['other.model'], DEMUCS_CLASS_MODULES]) {
      await rejectsWith(() => readCheckpoint(own, modules), 'MODEL_INVALID', /^\S+own-class\.th: unsupported class other\.models\.Net in checkpoint$/);
    }
    const demucs = checkpointFile('demucs-class', { kwargs: sourcesKwarg() });
    assert.equal(readDemucsCheckpoint(demucs).klass, 'demucs.htdemucs.HTDemucs');
    await rejectsWith(() => readCheckpoint(demucs, []), 'MODEL_INVALID', /unsupported class demucs\.htdemucs\.HTDemucs in checkpoint$/);
    await rejectsWith(() => checkCheckpoint(demucs, ['diffq']), 'MODEL_INVALID', /unsupported class demucs\.htdemucs\.HTDemucs in checkpoint$/);
  });

  it('names a model class other than HTDemucs, HDemucs and Demucs', async () => {
    const file = checkpointFile('tasnet', { klass: ['demucs.tasnet', 'ConvTasNet'], kwargs: sourcesKwarg() });
    await rejectsWith(() => convertCheckpoint(file, scratch), 'MODEL_INVALID', /unsupported class demucs\.tasnet\.ConvTasNet/);
  });

  it('names unsupported and unknown constructor options', async () => {
    const cases: [number[], RegExp][] = [
      [[...str('cac'), ...op.newfalse], /unsupported HTDemucs option cac=False/],
      [[...str('t_emb'), ...str('cape')], /unsupported HTDemucs option t_emb='cape'/],
      [[...str('wobble'), ...int(3)], /unsupported HTDemucs option wobble/],
      [[...str('depth'), ...int(6)], /unsupported HTDemucs option depth=6/],
    ];
    for (const [index, [kwargs, pattern]] of cases.entries()) {
      const file = checkpointFile(`option-${index}`, { kwargs: [...sourcesKwarg(), ...kwargs] });
      await rejectsWith(() => convertCheckpoint(file, scratch), 'MODEL_INVALID', pattern);
    }
  });

  it('reports a missing parameter by name', async () => {
    const file = checkpointFile('no-weights', { kwargs: sourcesKwarg() });
    await rejectsWith(() => convertCheckpoint(file, scratch), 'MODEL_INVALID', /the checkpoint lacks tencoder\.0\.conv\.weight/);
  });

  it('rejects a file that is not a zip', async () => {
    const file = path.join(scratch, 'not-a-zip.th');
    writeFileSync(file, 'hello');
    await rejectsWith(() => readDemucsCheckpoint(file), 'MODEL_INVALID', /not a valid zip archive/);
  });
});

describe('demucs unpickler', () => {
  it('builds the plain data of protocol 2 (and the text opcodes of protocol 0)', () => {
    const bytes = Uint8Array.from([
      ...op.proto,
      ...op.emptyList,
      0x71,
      0, // BINPUT 0
      ...op.mark,
      0x4e, // NONE
      0x88,
      0x89, // True, False
      0x4b,
      200, // BININT1
      0x4d,
      0x34,
      0x12, // BININT2 0x1234
      ...int(-7),
      0x8a,
      2,
      0x00,
      0x80, // LONG1 −32768
      0x8a,
      9,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      0,
      1, // LONG1 2^64
      0x47,
      ...Buffer.from([0x3f, 0xf8, 0, 0, 0, 0, 0, 0]), // BINFLOAT 1.5 (big-endian)
      0x46,
      ...Buffer.from('2.25\n'), // FLOAT
      0x49,
      ...Buffer.from('42\n'), // INT
      0x55,
      3,
      ...Buffer.from('abc'), // SHORT_BINSTRING
      0x8c,
      2,
      ...Buffer.from('é'), // SHORT_BINUNICODE
      0x43,
      2,
      9,
      8, // SHORT_BINBYTES
      0x4b,
      1,
      0x4b,
      2,
      0x86, // TUPLE2 (1, 2)
      ...op.emptyDict,
      ...str('k'),
      0x68,
      0,
      0x73, // {'k': <memo 0>} via SETITEM
      ...op.appends,
      ...op.stop,
    ]);
    const value = unpickle(bytes, {
      resolveGlobal: () => {
        throw new Error('no globals expected');
      },
    });
    assert.ok(Array.isArray(value));
    const [none, yes, no, b1, b2, neg, long, huge, f, ftext, itext, latin, unicode, raw, pair, dict] = value;
    assert.deepEqual(
      [none, yes, no, b1, b2, neg, long, huge, f, ftext, itext, latin, unicode],
      [null, true, false, 200, 0x1234, -7, -32768, 2n ** 64n, 1.5, 2.25, 42, 'abc', 'é'],
    );
    assert.deepEqual(Array.from(raw as Uint8Array), [9, 8]);
    assert.ok(pair instanceof PickleTuple);
    assert.deepEqual(pair.items, [1, 2]);
    assert.ok(dict instanceof Map);
    assert.equal(dict.get('k'), value, 'memo references resolve to the same object');
  });

  it('refuses opcodes that would build arbitrary objects', () => {
    const bytes = Uint8Array.from([...op.proto, ...global('demucs.x', 'Y'), ...op.emptyTuple, 0x81, ...op.stop]); // NEWOBJ
    assert.throws(() => unpickle(bytes, { resolveGlobal: (module, name) => ({ pickleKind: `${module}.${name}` }) }), /unsupported pickle opcode 0x81/);
  });
});

describe('demucs bag files', () => {
  it('reads flow-style models and weights (as in htdemucs_ft.yaml)', { skip }, () => {
    const bag = parseBagFile(readFileSync(path.join(FIXTURES, 'htdemucs_ft_small.yaml'), 'utf8'));
    assert.deepEqual(bag.models, ['bag_member_0', 'bag_member_1', 'bag_member_2', 'bag_member_3']);
    assert.deepEqual(bag.weights, [
      [1, 0, 0, 0],
      [0, 1, 0, 0],
      [0, 0, 1, 0],
      [0, 0, 0, 1],
    ]);
  });

  it('reads block lists, comments and a segment', () => {
    const bag = parseBagFile('# a bag\nmodels:\n- 0d19c1c6\n- "7ecf8ec1"  # second\nsegment: 44\nweights:\n- [1., 0.5]\n- [0, 2e-1]\n');
    assert.deepEqual(bag.models, ['0d19c1c6', '7ecf8ec1']);
    assert.deepEqual(bag.weights, [
      [1, 0.5],
      [0, 0.2],
    ]);
    assert.equal(bag.segment, 44);
  });

  it('rejects a weight matrix that does not fit the models', () => {
    assert.throws(() => parseBagFile("models: ['a', 'b']\nweights: [[1, 0]]\n"), /one row per model/);
  });
});

describe('HTDemucs weights whose shapes disagree', () => {
  it('refuses a bias that does not fit its weight, naming it and the shape the config implies (a graph would broadcast it silently)', { skip }, () => {
    const checkpoint = readDemucsCheckpoint(path.join(FIXTURES, 'htdemucs_small.th'));
    const config = parseHTDemucsConfig(checkpoint.kwargs);
    const biases = [...checkpoint.state.keys()].filter((name) => name.endsWith('.bias') && checkpoint.state.has(name.replace(/bias$/, 'weight')));
    assert.ok(biases.length > 10, 'the fixture has biases to damage');
    for (const name of [biases[0], biases.find((bias) => bias.includes('conv_tr')), biases.at(-1)] as string[]) {
      const state = new Map(checkpoint.state);
      const bias = state.get(name);
      assert.ok(bias);
      state.set(name, { ...bias, shape: [bias.data.length - 1], data: bias.data.subarray(1) });
      assert.throws(
        () => buildHTDemucsGraph(config, state),
        (error: Error) => error.message === `checkpoint: ${name} is [${bias.data.length - 1}], the config implies [${bias.data.length}]`,
      );
    }
  });
});
