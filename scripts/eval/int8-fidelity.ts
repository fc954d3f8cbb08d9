/**
 * What `--precision int8` costs in fidelity: every shared fixture run in fp32 and in int8 through
 * the same engine, SNR per stem of int8 against fp32 and of both against the official reference;
 * and full-size random networks (the htdemucs-size Demucs fixture; with `--full-roformer` the
 * viperx-size BS-RoFormer on one 8-s chunk, slow) int8 against fp32.
 *
 *   node --import tsx scripts/eval/int8-fidelity.ts [--families demucs,roformer,scnet] [--full-roformer] [--threads 2]
 *
 * Random weights say how the int8 kernels round, not how a trained network's weight and
 * activation ranges (outliers) fare: that is what the bundled model's SDR on real clips is for.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadDemucs } from '../../src/demucs/index.js';
import type { Precision } from '../../src/onnx/quantize.js';
import { parseRoformerConfig } from '../../src/roformer/config.js';
import { RoformerNetwork } from '../../src/roformer/engine.js';
import { ScnetNetwork } from '../../src/scnet/engine.js';
import { separate, type SegmentModel } from '../../src/separation/index.js';
import { PRESETS, randomState } from '../bench/roformer-random.js';

const { values } = parseArgs({
  options: {
    families: { type: 'string', default: 'demucs,roformer,scnet' },
    'full-roformer': { type: 'boolean', default: false },
    threads: { type: 'string', default: '2' },
    shared: { type: 'string', default: '../shared' },
  },
});
const threads = Number(values.threads);
const families = values.families.split(',');
const cacheDir = mkdtempSync(path.join(tmpdir(), 'stemsplit-int8-'));
const PRECISIONS: readonly Precision[] = ['fp32', 'int8'];

/** SNR of `ours` against `reference` per plane group; `stride` > 1 when the reference kept every stride-th sample. */
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
function report(what: string, int8VsFp32: number[], fp32VsRef?: number[], int8VsRef?: number[]): void {
  const refs = fp32VsRef && int8VsRef ? `   vs reference: fp32 ${fmt(fp32VsRef)}, int8 ${fmt(int8VsRef)}` : '';
  console.log(`${what.padEnd(44)} int8 vs fp32 ${fmt(int8VsFp32)} dB (min ${Math.min(...int8VsFp32).toFixed(1)})${refs}`);
}

function readF32(file: string): Float32Array {
  const bytes = readFileSync(file);
  return new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
}

async function demucsFixtures(): Promise<void> {
  const dir = path.join(values.shared, 'fixtures/demucs');
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as {
    output_stride: number;
    fixtures: Record<string, { checkpoint?: string; bag?: string; sources: string[]; forward_in?: [string, number[]]; forward_out?: [string, number[]]; separate_in?: [string, number[]]; separate_out?: [string, number[]] }>;
  };
  const stride = manifest.output_stride;
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    const file = fixture.bag ?? fixture.checkpoint;
    if (file === undefined) continue;
    const stems = fixture.sources.length;
    const models = new Map<Precision, SegmentModel>();
    for (const precision of PRECISIONS) models.set(precision, await loadDemucs(path.join(dir, file), { cacheDir, intraOpThreads: threads, precision }));
    if (fixture.forward_in && fixture.forward_out) {
      const input = readF32(path.join(dir, fixture.forward_in[0]));
      const reference = readF32(path.join(dir, fixture.forward_out[0]));
      const [fp32, int8] = await Promise.all(PRECISIONS.map((p) => models.get(p)!.run(input)));
      report(`demucs ${name} forward`, snrs(fp32!, int8!, stems), snrs(reference, fp32!, stems, stride), snrs(reference, int8!, stems, stride));
    }
    if (fixture.separate_in && fixture.separate_out) {
      const track = { data: readF32(path.join(dir, fixture.separate_in[0])), length: fixture.separate_in[1][1] as number };
      const reference = readF32(path.join(dir, fixture.separate_out[0]));
      const out: Float32Array[] = [];
      for (const precision of PRECISIONS) {
        const planes = await separate(models.get(precision)!, track, { overlap: 0.25, shifts: 0 });
        out.push(concat(planes));
      }
      report(`demucs ${name} whole track`, snrs(out[0]!, out[1]!, stems), snrs(reference, out[0]!, stems, stride), snrs(reference, out[1]!, stems, stride));
    }
    for (const model of models.values()) await model.dispose();
  }
}

interface Int8Network {
  forward(chunk: Float32Array): Promise<Float32Array>;
  demixTrack(track: Float32Array): Promise<Float32Array>;
  release(): Promise<void>;
}

/** Every MSST fixture of `modelTypes` under `folder`, forward and demix, in fp32 and int8 through the family's engine. */
async function msstFixtures(family: string, folder: string, modelTypes: readonly string[], open: (checkpoint: string, precision: Precision) => Promise<Int8Network>): Promise<void> {
  const dir = path.join(values.shared, folder);
  const manifest = JSON.parse(readFileSync(path.join(dir, 'fixtures.json'), 'utf8')) as {
    fixtures: Record<string, { model_type: string; checkpoint: { file: string }; instruments_out: string[]; files: Record<string, { file: string }> }>;
  };
  for (const [name, fixture] of Object.entries(manifest.fixtures)) {
    if (!modelTypes.includes(fixture.model_type)) continue;
    const stems = fixture.instruments_out.length;
    const networks = await Promise.all(PRECISIONS.map((precision) => open(path.join(dir, fixture.checkpoint.file), precision)));
    const forwardIn = fixture.files['forward_in'];
    const forwardOut = fixture.files['forward_out'];
    if (forwardIn && forwardOut) {
      const input = readF32(path.join(dir, forwardIn.file));
      const reference = readF32(path.join(dir, forwardOut.file));
      const [fp32, int8] = [await networks[0]!.forward(input), await networks[1]!.forward(input)];
      report(`${family} ${name} forward`, snrs(fp32, int8, stems), snrs(reference, fp32, stems), snrs(reference, int8, stems));
    }
    const demixIn = fixture.files['demix_in'];
    const demixOut = fixture.files['demix_out'];
    if (demixIn && demixOut) {
      const track = readF32(path.join(dir, demixIn.file));
      const reference = readF32(path.join(dir, demixOut.file));
      const [fp32, int8] = [await networks[0]!.demixTrack(track), await networks[1]!.demixTrack(track)];
      report(`${family} ${name} demix`, snrs(fp32, int8, stems), snrs(reference, fp32, stems), snrs(reference, int8, stems));
    }
    await Promise.all(networks.map((network) => network.release()));
  }
}

/** viperx's BS-RoFormer size with random weights, one 8-s chunk of noise-and-tones, int8 against fp32. */
async function fullRoformer(): Promise<void> {
  const config = parseRoformerConfig(PRESETS['viperx-bs']!, 'viperx-bs');
  const state = randomState(config);
  const chunk = new Float32Array(2 * config.chunkSize);
  let seed = 5;
  for (let i = 0; i < chunk.length; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const t = (i % config.chunkSize) / config.sampleRate;
    chunk[i] = 0.2 * Math.sin(2 * Math.PI * 220 * t) + 0.1 * Math.sin(2 * Math.PI * 55 * t) + 0.05 * (seed / 4294967296 - 0.5);
  }
  const outputs: Float32Array[] = [];
  for (const precision of PRECISIONS) {
    const dir = mkdtempSync(path.join(cacheDir, `viperx-${precision}-`));
    const stages = RoformerNetwork.writeStages(config, state, dir, precision);
    const network = await RoformerNetwork.fromStages(config, dir, stages, { intraOpThreads: threads });
    outputs.push(await network.forward(chunk));
    await network.release();
    rmSync(dir, { recursive: true, force: true });
  }
  report('roformer viperx-size random, one 8-s chunk', snrs(outputs[0]!, outputs[1]!, config.numStems));
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

try {
  console.log(`int8 vs fp32, SNR per stem (dB), ${threads} threads; references: the official code's outputs in ${values.shared}/fixtures`);
  if (families.includes('demucs')) await demucsFixtures();
  if (families.includes('roformer')) {
    await msstFixtures('roformer', 'fixtures/roformer', ['bs_roformer', 'mel_band_roformer'], (checkpoint, precision) => RoformerNetwork.open(checkpoint, { cacheDir, intraOpThreads: threads, precision }));
  }
  if (families.includes('scnet')) {
    await msstFixtures('scnet', 'fixtures/msst', ['scnet'], (checkpoint, precision) => ScnetNetwork.open(checkpoint, { cacheDir, intraOpThreads: threads, precision }));
  }
  if (values['full-roformer']) await fullRoformer();
} finally {
  rmSync(cacheDir, { recursive: true, force: true });
}
