/**
 * What `--precision int8` costs in fidelity, and what it gains in speed: every shared fixture of
 * every family that computes in int8, run in fp32 and in int8 through the same engine, SNR per stem
 * of int8 against fp32 (and of both against the official reference, where the fixture has one);
 * the bundled models on a synthetic song; with `--full`, the full-size random networks the
 * benchmarks build (viperx's BS-RoFormer and Kim's Mel-Band RoFormer on one 8-s chunk, SCNet-large
 * on one 11-s chunk, Demucs v3 and v2 at their released size on one 10-s window; htdemucs' size
 * is a Demucs fixture). Whole tracks and full-size networks are
 * timed fp32, int8, fp32, int8, … in the same process (`--runs`), so the speed ratio is measured
 * under the same load (on the narrow fixtures it says little about a released model's).
 *
 *   nice -n 19 node --import tsx scripts/eval/int8-fidelity.ts [--full | --full-only] [--runs 2]
 *        [--networks hdemucs,demucs,viperx-bs,kim-mel,scnet-large]   (which full-size networks)
 *        [--families demucs,demucs-v3,roformer,scnet,bundled] [--threads 2]
 *        [--int8 engine|tensor|block:N]   (the MSST networks' int8 matrix products: as the engine builds
 *                                          them; DynamicQuantizeMatMul, one activation scale per tensor;
 *                                          or MatMulNBits, weights and activations per block of N inputs)
 *        [--keep-float REGEX]             (with --int8: the MSST stages whose graph name matches stay fp32, e.g. 'band-split|masks')
 *
 * Prints one line per case as it goes, then the whole table (markdown) with the box's load before
 * and after. The bar is 40 dB int8 against fp32 on every stem of every case (issue 40).
 *
 * Random weights say how the int8 kernels round, not how a trained network's weight and
 * activation ranges (outliers) fare: that is what the bundled model's SDR on real clips is for.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { synthesiseSong } from '../../test/support/audio.js';
import { resolveConfig } from '../../src/config.js';
import { loadDemucs } from '../../src/demucs/index.js';
import { openV3 } from '../../src/demucs/segment-model-v3.js';
import { parseV3Config } from '../../src/demucs/v3-config.js';
import { v3Parameters } from '../../src/demucs/v3-parameters.js';
import { configBeside } from '../../src/msst/config.js';
import type { OpsOptions } from '../../src/onnx/ops.js';
import type { Precision } from '../../src/onnx/quantize.js';
import { parseRoformerConfig, readRoformerConfig } from '../../src/msst/roformer/config.js';
import { RoformerNetwork } from '../../src/msst/roformer/engine.js';
import { parseScnetConfig, readScnetConfig } from '../../src/msst/scnet/config.js';
import { ScnetNetwork } from '../../src/msst/scnet/engine.js';
import { readDemucsCheckpoint } from '../../src/demucs/checkpoint.js';
import type { CheckpointTensor } from '../../src/torch/checkpoint.js';
import { separate, type SegmentModel } from '../../src/separation/index.js';
import { loadManifestModel } from '../../src/bundled/manifest.js';
import { PRESETS, randomState } from '../bench/roformer-random.js';
import { randomScnetState, SCNET_LARGE } from '../bench/scnet-random.js';
import { benchTrack, randomTensor } from '../bench/synthetic.js';

const { values } = parseArgs({
  options: {
    families: { type: 'string', default: 'demucs,demucs-v3,roformer,scnet,bundled' },
    full: { type: 'boolean', default: false },
    'full-only': { type: 'boolean', default: false },
    networks: { type: 'string', default: 'hdemucs,demucs,viperx-bs,kim-mel,scnet-large' },
    runs: { type: 'string', default: '1' },
    threads: { type: 'string', default: '2' },
    shared: { type: 'string', default: '../shared' },
    int8: { type: 'string', default: 'engine' },
    'keep-float': { type: 'string' },
  },
});
const threads = Number(values.threads);
const runs = Math.max(1, Number(values.runs));
const families = values.families.split(',');
const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-int8-'));
const PRECISIONS: readonly Precision[] = ['fp32', 'int8'];
const BAR_DB = 40;

/** The MSST networks' build options at a precision, as `--int8` asks; undefined: as the engine builds them. */
function msstBuild(precision: Precision): OpsOptions | undefined {
  if ((values.int8 === 'engine' && values['keep-float'] === undefined) || precision === 'fp32') return undefined;
  const keep = values['keep-float'] === undefined ? {} : { floatGraphs: new RegExp(values['keep-float']) };
  if (values.int8 === 'tensor' || values.int8 === 'engine') return { precision, ...keep };
  const block = /^block:(\d+)$/.exec(values.int8);
  if (!block) throw new Error(`--int8 takes engine, tensor or block:N; got ${values.int8}`);
  return { precision, int8BlockSize: Number(block[1]), ...keep };
}

interface Row {
  readonly family: string;
  readonly network: string;
  readonly test: string;
  readonly int8VsFp32: readonly number[];
  readonly fp32VsRef?: readonly number[];
  readonly int8VsRef?: readonly number[];
  /** Seconds per pass of each run, fp32 and int8 interleaved. */
  readonly seconds?: { readonly fp32: readonly number[]; readonly int8: readonly number[] };
}
const rows: Row[] = [];

/** SNR of `ours` against `reference` per stem (planar [stems, 2, length]); `stride` > 1 when the reference kept every stride-th sample. */
function snrs(reference: Float32Array, ours: Float32Array, stems: number, stride = 1): number[] {
  const planeRef = reference.length / stems;
  const planeOurs = ours.length / stems;
  return Array.from({ length: stems }, (_, s) => {
    let signal = 0;
    let noise = 0;
    const channels = 2;
    const keptPerChannel = planeRef / channels;
    const oursPerChannel = planeOurs / channels;
    for (let c = 0; c < channels; c++) {
      for (let j = 0; j < keptPerChannel; j++) {
        const r = reference[s * planeRef + c * keptPerChannel + j] as number;
        const o = ours[s * planeOurs + c * oursPerChannel + j * stride] as number;
        signal += r * r;
        noise += (r - o) ** 2;
      }
    }
    return 10 * Math.log10(signal / Math.max(noise, 1e-30));
  });
}

const fmt = (values: readonly number[]): string => values.map((v) => v.toFixed(1)).join(' / ');
const min = (values: readonly number[]): number => Math.min(...values);

function record(row: Row): void {
  rows.push(row);
  const refs = row.fp32VsRef && row.int8VsRef ? `   vs reference: fp32 ${fmt(row.fp32VsRef)}, int8 ${fmt(row.int8VsRef)}` : '';
  const time = row.seconds
    ? `   fp32 ${min(row.seconds.fp32).toFixed(2)} s, int8 ${min(row.seconds.int8).toFixed(2)} s (${(min(row.seconds.fp32) / min(row.seconds.int8)).toFixed(2)}×)`
    : '';
  console.log(
    `${`${row.family} ${row.network} ${row.test}`.padEnd(50)} int8 vs fp32 ${fmt(row.int8VsFp32)} dB (min ${min(row.int8VsFp32).toFixed(1)})${refs}${time}`,
  );
}

/** Runs `pass` for fp32 and int8 interleaved `times` times; the outputs of the first run and every run's seconds. */
async function interleaved(
  pass: (precision: Precision) => Promise<Float32Array>,
  times: number,
): Promise<{ fp32: Float32Array; int8: Float32Array; seconds: { fp32: number[]; int8: number[] } }> {
  const outputs = new Map<Precision, Float32Array>();
  const seconds = { fp32: [] as number[], int8: [] as number[] };
  for (let run = 0; run < times; run++) {
    for (const precision of PRECISIONS) {
      const started = performance.now();
      const out = await pass(precision);
      seconds[precision].push((performance.now() - started) / 1000);
      if (!outputs.has(precision)) outputs.set(precision, out);
    }
  }
  return { fp32: outputs.get('fp32') as Float32Array, int8: outputs.get('int8') as Float32Array, seconds };
}

function readF32(file: string): Float32Array {
  const bytes = readFileSync(file);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

function concat(planes: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(planes.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const plane of planes) {
    out.set(plane, at);
    at += plane.length;
  }
  return out;
}

async function loadBoth(file: string): Promise<Map<Precision, SegmentModel>> {
  const models = new Map<Precision, SegmentModel>();
  for (const precision of PRECISIONS) models.set(precision, await loadDemucs(file, { cacheDir, intraOpThreads: threads, precision }));
  return models;
}

function separateBoth(models: Map<Precision, SegmentModel>, track: { data: Float32Array; length: number }): ReturnType<typeof interleaved> {
  return interleaved(async (precision) => concat(await separate(models.get(precision)!, track, { overlap: 0.25, shifts: 0 })), runs);
}

/** HTDemucs (v4): each checkpoint's forward pass (the full-size random one timed), each bag's whole track. */
async function demucsFixtures(): Promise<void> {
  const dir = path.join(values.shared, 'fixtures/demucs');
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as {
    output_stride: number;
    fixtures: Record<
      string,
      {
        checkpoint?: string;
        bag?: string;
        sources: string[];
        forward_in?: [string, number[]];
        forward_out?: [string, number[]];
        separate_in?: [string, number[]];
        separate_out?: [string, number[]];
      }
    >;
  };
  const stride = manifest.output_stride;
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    const file = fixture.bag ?? fixture.checkpoint;
    if (file === undefined) continue;
    const stems = fixture.sources.length;
    const models = await loadBoth(path.join(dir, file));
    const network = name.includes('full') ? `${name} (htdemucs size)` : name;
    if (fixture.forward_in && fixture.forward_out) {
      const input = readF32(path.join(dir, fixture.forward_in[0]));
      const reference = readF32(path.join(dir, fixture.forward_out[0]));
      const out = await interleaved((precision) => models.get(precision)!.run(input), name.includes('full') ? runs : 1);
      record({
        family: 'demucs',
        network,
        test: 'forward',
        int8VsFp32: snrs(out.fp32, out.int8, stems),
        fp32VsRef: snrs(reference, out.fp32, stems, stride),
        int8VsRef: snrs(reference, out.int8, stems, stride),
        ...(name.includes('full') ? { seconds: out.seconds } : {}),
      });
    }
    if (fixture.separate_in && fixture.separate_out) {
      const track = { data: readF32(path.join(dir, fixture.separate_in[0])), length: fixture.separate_in[1][1] as number };
      const reference = readF32(path.join(dir, fixture.separate_out[0]));
      const out = await separateBoth(models, track);
      record({
        family: 'demucs',
        network,
        test: 'whole track',
        int8VsFp32: snrs(out.fp32, out.int8, stems),
        fp32VsRef: snrs(reference, out.fp32, stems, stride),
        int8VsRef: snrs(reference, out.int8, stems, stride),
        seconds: out.seconds,
      });
    }
    for (const model of models.values()) await model.dispose();
  }
}

/** Demucs v3 (HDemucs) and v2 (Demucs): each HDemucs checkpoint's forward on the mix, each v2 checkpoint's whole track (int8 against fp32 only), each bag's whole track. */
async function demucsV3Fixtures(): Promise<void> {
  const dir = path.join(values.shared, 'fixtures/demucs-v3');
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as {
    output_stride: number;
    fixtures: Record<
      string,
      {
        class?: string;
        checkpoint?: string;
        bag?: string;
        sources: string[];
        forward_out?: [string, number[]];
        separate_in?: [string, number[]];
        separate_out?: [string, number[]];
      }
    >;
  };
  const stride = manifest.output_stride;
  const mix = readF32(path.join(dir, 'mix.in.f32'));
  const track = { data: mix, length: mix.length / 2 };
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    const file = fixture.bag ?? fixture.checkpoint;
    if (file === undefined) continue;
    const stems = fixture.sources.length;
    const models = await loadBoth(path.join(dir, file));
    const network = `${name} (${fixture.class ?? 'bag'})`;
    if (fixture.class === 'HDemucs' && fixture.forward_out) {
      const reference = readF32(path.join(dir, fixture.forward_out[0]));
      const out = await interleaved((precision) => models.get(precision)!.run(mix), 1);
      record({
        family: 'demucs v3',
        network,
        test: 'forward',
        int8VsFp32: snrs(out.fp32, out.int8, stems),
        fp32VsRef: snrs(reference, out.fp32, stems, stride),
        int8VsRef: snrs(reference, out.int8, stems, stride),
      });
    } else if (fixture.class !== undefined) {
      const out = await separateBoth(models, track);
      record({ family: 'demucs v2', network, test: 'whole track', int8VsFp32: snrs(out.fp32, out.int8, stems), seconds: out.seconds });
    }
    if (fixture.separate_out) {
      const reference = readF32(path.join(dir, fixture.separate_out[0]));
      const out = await separateBoth(models, track);
      record({
        family: 'demucs v3',
        network,
        test: 'whole track',
        int8VsFp32: snrs(out.fp32, out.int8, stems),
        fp32VsRef: snrs(reference, out.fp32, stems, stride),
        int8VsRef: snrs(reference, out.int8, stems, stride),
        seconds: out.seconds,
      });
    }
    for (const model of models.values()) await model.dispose();
  }
}

interface MsstNetwork {
  forward(chunk: Float32Array): Promise<Float32Array>;
  demixTrack(track: Float32Array): Promise<Float32Array>;
  release(): Promise<void>;
}

/** Every MSST fixture of `modelTypes` under `folder`, forward and demix, in fp32 and int8 through the family's engine. */
async function msstFixtures(
  family: string,
  folder: string,
  modelTypes: readonly string[],
  open: (checkpoint: string, precision: Precision) => Promise<MsstNetwork>,
): Promise<void> {
  const dir = path.join(values.shared, folder);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as {
    fixtures: Record<string, { model_type: string; checkpoint: { file: string }; instruments_out: string[]; files: Record<string, { file: string }> }>;
  };
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    if (!modelTypes.includes(fixture.model_type)) continue;
    const stems = fixture.instruments_out.length;
    const networks = new Map<Precision, MsstNetwork>();
    for (const precision of PRECISIONS) networks.set(precision, await open(path.join(dir, fixture.checkpoint.file), precision));
    for (const [test, pass] of [
      ['forward', 'forward'],
      ['demix', 'demixTrack'],
    ] as const) {
      const input = fixture.files[`${test}_in`];
      const output = fixture.files[`${test}_out`];
      if (!input || !output) continue;
      const data = readF32(path.join(dir, input.file));
      const reference = readF32(path.join(dir, output.file));
      const out = await interleaved((precision) => networks.get(precision)![pass](data), 1);
      record({
        family,
        network: name,
        test,
        int8VsFp32: snrs(out.fp32, out.int8, stems),
        fp32VsRef: snrs(reference, out.fp32, stems),
        int8VsRef: snrs(reference, out.int8, stems),
      });
    }
    for (const network of networks.values()) await network.release();
  }
}

function openRoformer(checkpoint: string, precision: Precision): Promise<RoformerNetwork> {
  const options = msstBuild(precision);
  if (options === undefined) return RoformerNetwork.open(checkpoint, { cacheDir, intraOpThreads: threads, precision });
  const configPath = configBeside(checkpoint);
  return RoformerNetwork.family.open(
    checkpoint,
    readRoformerConfig(configPath),
    configPath,
    { options, variant: `${values.int8.replace(':', '')}${values['keep-float'] ? '-keep' : ''}`, cacheDir },
    { intraOpThreads: threads },
  );
}

function openScnet(checkpoint: string, precision: Precision): Promise<ScnetNetwork> {
  const options = msstBuild(precision);
  if (options === undefined) return ScnetNetwork.open(checkpoint, { cacheDir, intraOpThreads: threads, precision });
  const configPath = configBeside(checkpoint);
  return ScnetNetwork.family.open(
    checkpoint,
    readScnetConfig(configPath),
    configPath,
    { options, variant: `${values.int8.replace(':', '')}${values['keep-float'] ? '-keep' : ''}`, cacheDir },
    { intraOpThreads: threads },
  );
}

/** A full-size random network's stages at both precisions, one chunk of the bench's synthetic music through each, timed interleaved. */
async function fullSize<Network extends MsstNetwork>(
  family: string,
  network: string,
  chunkSamples: number,
  build: (directory: string, precision: Precision) => Promise<Network>,
): Promise<void> {
  const chunk = benchTrack(chunkSamples / 44_100, 44_100, 2);
  const networks = new Map<Precision, Network>();
  for (const precision of PRECISIONS) networks.set(precision, await build(mkdtempSync(path.join(cacheDir, `${family}-${precision}-`)), precision));
  const out = await interleaved((precision) => networks.get(precision)!.forward(chunk), runs);
  const stems = out.fp32.length / chunk.length;
  record({ family, network, test: `one ${(chunkSamples / 44_100).toFixed(0)}-s chunk`, int8VsFp32: snrs(out.fp32, out.int8, stems), seconds: out.seconds });
  for (const opened of networks.values()) await opened.release();
}

async function fullRoformer(preset: 'viperx-bs' | 'kim-mel'): Promise<void> {
  const config = parseRoformerConfig(PRESETS[preset]!, preset);
  const state = randomState(config);
  await fullSize('roformer', `${preset} size (random)`, config.chunkSize, async (directory, precision) => {
    const options = msstBuild(precision);
    const stages = options
      ? RoformerNetwork.family.writeStages(config, state, directory, options)
      : RoformerNetwork.writeStages(config, state, directory, precision);
    return RoformerNetwork.fromStages(config, directory, stages, { intraOpThreads: threads });
  });
}

async function fullScnet(): Promise<void> {
  const config = parseScnetConfig(structuredClone(SCNET_LARGE), 'SCNet-large');
  const state = randomScnetState(config);
  await fullSize('scnet', 'SCNet-large size (random)', config.chunkSize, async (directory, precision) => {
    const options = msstBuild(precision);
    const stages = options ? ScnetNetwork.family.writeStages(config, state, directory, options) : ScnetNetwork.writeStages(config, state, directory, precision);
    return ScnetNetwork.fromStages(config, directory, stages, { intraOpThreads: threads });
  });
}

/**
 * Demucs v3 (HDemucs, `hdemucs_mmi`'s channels 48) and v2 (Demucs, `mdx`'s time-domain members'
 * channels 64) at their released size with random weights: the shared fixtures' kwargs widened
 * back (as scripts/bench/demucs-v3-size.ts does), one 10-s window, timed interleaved.
 */
async function fullV3(kind: 'HDemucs' | 'Demucs'): Promise<void> {
  const fixture = path.join(values.shared, 'fixtures/demucs-v3', kind === 'HDemucs' ? 'hdemucs_mmi_m0.th' : 'mdx_m0.th');
  const kwargs = new Map(readDemucsCheckpoint(fixture).kwargs);
  kwargs.set('channels', kind === 'HDemucs' ? 48 : 64);
  kwargs.set('dconv_comp', 4);
  const config = parseV3Config(kind, kwargs);
  const read = (): Map<string, CheckpointTensor> => {
    const seed = { seed: 1 };
    return new Map(v3Parameters(config).map(([name, shape]) => [name, randomTensor(shape, 0.015, seed)]));
  };
  const models = new Map<Precision, SegmentModel>();
  for (const precision of PRECISIONS)
    models.set(
      precision,
      await openV3(config, { file: `${kind} (random, released size)`, read }, kind, { intraOpThreads: threads, precision, bagSegment: 10 }),
    );
  const fp32 = models.get('fp32')!;
  const window = fp32.windowSamples?.(fp32.segmentSamples) ?? fp32.segmentSamples;
  const input = benchTrack(window / 44_100, 44_100, 2);
  const out = await interleaved((precision) => models.get(precision)!.run(input), runs);
  record({
    family: kind === 'HDemucs' ? 'demucs v3' : 'demucs v2',
    network: `${kind === 'HDemucs' ? 'hdemucs_mmi' : 'mdx member'} size (random)`,
    test: 'one 10-s window',
    int8VsFp32: snrs(out.fp32, out.int8, fp32.sources.length),
    seconds: out.seconds,
  });
  for (const model of models.values()) await model.dispose();
}

/** The bundled models on 12 s of the synthetic song the tests use: int8 (ConvInteger) against fp32, timed. */
async function bundled(): Promise<void> {
  const song = synthesiseSong(12);
  const track = { data: song, length: song.length / 2 };
  for (const name of ['stemsplit-small-4s', 'stemsplit-small-6s']) {
    const manifest = path.join(resolveConfig({}, {}).bundledModelsDir, name, 'model.json');
    const models = new Map<Precision, SegmentModel>();
    for (const precision of PRECISIONS) models.set(precision, await loadManifestModel(manifest, { intraOpThreads: threads, precision }));
    const out = await interleaved(async (precision) => concat(await separate(models.get(precision)!, track, { overlap: 0.25, shifts: 0 })), runs);
    record({
      family: 'bundled',
      network: name,
      test: '12-s synthetic song',
      int8VsFp32: snrs(out.fp32, out.int8, models.get('fp32')!.sources.length),
      seconds: out.seconds,
    });
    for (const model of models.values()) await model.dispose();
  }
}

function table(): string[] {
  const cell = (values: readonly number[] | undefined) => (values ? fmt(values) : '—');
  const lines = [
    '| family | network | case | int8 vs fp32, per stem (dB) | min | ≥ 40 dB | fp32 vs reference | int8 vs reference | fp32 s | int8 s | int8 speed-up |',
    '|---|---|---|---|---:|---|---|---|---:|---:|---:|',
  ];
  for (const row of rows) {
    const time = row.seconds
      ? [min(row.seconds.fp32).toFixed(2), min(row.seconds.int8).toFixed(2), `${(min(row.seconds.fp32) / min(row.seconds.int8)).toFixed(2)}×`]
      : ['', '', ''];
    lines.push(
      `| ${row.family} | ${row.network} | ${row.test} | ${fmt(row.int8VsFp32)} | ${min(row.int8VsFp32).toFixed(1)} | ${min(row.int8VsFp32) >= BAR_DB ? 'yes' : '**no**'} | ${cell(row.fp32VsRef)} | ${cell(row.int8VsRef)} | ${time.join(' | ')} |`,
    );
  }
  return lines;
}

const load = (): string =>
  loadavg()
    .map((v) => v.toFixed(2))
    .join(' ');
try {
  const started = new Date().toISOString();
  console.log(
    `int8 vs fp32, SNR per stem (dB); ${threads} threads; MSST int8: ${values.int8}; ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores; ${started}; load ${load()}`,
  );
  const fixtures = (family: string) => families.includes(family) && !values['full-only'];
  const full = (family: string, network: string) =>
    families.includes(family) && (values.full || values['full-only']) && values.networks.split(',').includes(network);
  if (fixtures('demucs')) await demucsFixtures();
  if (fixtures('demucs-v3')) await demucsV3Fixtures();
  if (fixtures('roformer')) await msstFixtures('roformer', 'fixtures/roformer', ['bs_roformer', 'mel_band_roformer'], openRoformer);
  if (fixtures('scnet')) await msstFixtures('scnet', 'fixtures/msst', ['scnet'], openScnet);
  if (fixtures('bundled')) await bundled();
  if (full('demucs-v3', 'hdemucs')) await fullV3('HDemucs');
  if (full('demucs-v3', 'demucs')) await fullV3('Demucs');
  if (full('roformer', 'viperx-bs')) await fullRoformer('viperx-bs');
  if (full('roformer', 'kim-mel')) await fullRoformer('kim-mel');
  if (full('scnet', 'scnet-large')) await fullScnet();
  console.log(
    `\nload before ${started}: see the first line; after (${new Date().toISOString()}): ${load()}; times: the fastest of ${runs} interleaved run(s)\n`,
  );
  for (const line of table()) console.log(line);
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
