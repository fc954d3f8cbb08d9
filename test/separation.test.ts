/**
 * The separation pipeline against an independent, deliberately plain transcription of
 * Demucs' apply_model (whole-track arrays, recursive TensorChunk views), using small
 * segment models written here; and the bundled ONNX models run for real.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { isStemsplitError } from '../src/errors.js';
import { createOrtSession, ORT_PROFILE_ENV, runTensors } from '../src/onnx/session.js';
import {
  combineBag,
  NormalizationMeter,
  normalizationOf,
  separate,
  separateStream,
  shiftOffsets,
  statisticsOf,
  type SegmentModel,
  type SeparateOptions,
} from '../src/separation/index.js';
import { loadManifestModel, readModelManifest } from '../src/bundled/manifest.js';
import { maxDifference } from './support/assertions.js';

type Planar = number[][]; // [channel][time]

/** A model whose output depends on where a sample sits in the window, so any misalignment shows. */
function windowedGainModel(segmentSamples: number, gains: readonly number[], normalize = false, sampleRate = 1000): SegmentModel {
  return {
    name: 'windowed-gain',
    sampleRate,
    sources: gains.map((_, i) => `s${i}`),
    segmentSamples,
    normalize,
    async run(segment: Float32Array): Promise<Float32Array> {
      assert.equal(segment.length, 2 * segmentSamples);
      const out = new Float32Array(gains.length * 2 * segmentSamples);
      gains.forEach((gain, s) => {
        for (let c = 0; c < 2; c++) {
          for (let t = 0; t < segmentSamples; t++) {
            const x = segment[c * segmentSamples + t] ?? 0;
            out[(s * 2 + c) * segmentSamples + t] = gain * x * (0.5 + t / segmentSamples) + 0.01 * s;
          }
        }
      });
      return out;
    },
    async dispose(): Promise<void> {},
  };
}

function identityModel(segmentSamples: number, normalize = false): SegmentModel {
  return {
    name: 'identity',
    sampleRate: 1000,
    sources: ['all'],
    segmentSamples,
    normalize,
    run: async (segment) => Float32Array.from(segment),
    dispose: async () => {},
  };
}

/** A reproducible test signal: a few sines, noise from an LCG and a DC offset. */
function testTrack(length: number, seed = 1): Float32Array {
  let state = seed;
  const noise = (): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state / 2147483648 - 0.5;
  };
  const data = new Float32Array(2 * length);
  for (let t = 0; t < length; t++) {
    data[t] = 0.4 * Math.sin(t * 0.031) + 0.2 * noise() + 0.05;
    data[length + t] = 0.3 * Math.sin(t * 0.017 + 1) + 0.2 * noise() - 0.02;
  }
  return data;
}

// ---- The reference: Demucs' apply_model written out with whole arrays ----------------

/** Demucs' TensorChunk: a window on a base array; `padded` centres it and reads real neighbours. */
class RefChunk {
  readonly base: Planar;
  readonly offset: number;
  readonly length: number;
  constructor(parent: Planar | RefChunk, offset: number, length?: number) {
    const total = parent instanceof RefChunk ? parent.length : (parent[0]?.length ?? 0);
    assert.ok(offset >= 0 && offset < total);
    this.length = length === undefined ? total - offset : Math.min(total - offset, length);
    this.base = parent instanceof RefChunk ? parent.base : parent;
    this.offset = parent instanceof RefChunk ? parent.offset + offset : offset;
  }
  padded(target: number): Planar {
    const delta = target - this.length;
    const start = this.offset - Math.floor(delta / 2);
    return this.base.map((channel) =>
      Array.from({ length: target }, (_, i) => {
        const at = start + i;
        return at >= 0 && at < channel.length ? (channel[at] ?? 0) : 0;
      }),
    );
  }
}

type Estimate = number[][][]; // [source][channel][time]

async function refApply(model: SegmentModel, mix: RefChunk, opts: { shifts: number; overlap: number; power: number; offsets: number[] }): Promise<Estimate> {
  const S = model.sources.length;
  const zeros = (n: number): Estimate => Array.from({ length: S }, () => [new Array<number>(n).fill(0), new Array<number>(n).fill(0)]);
  if (opts.shifts > 0) {
    const maxShift = Math.trunc(0.5 * model.sampleRate);
    const padded = mix.padded(mix.length + 2 * maxShift);
    const out = zeros(mix.length);
    for (const offset of opts.offsets) {
      const shifted = new RefChunk(padded, offset, mix.length + maxShift - offset);
      const res = await refApply(model, shifted, { ...opts, shifts: 0 });
      out.forEach((src, s) => src.forEach((ch, c) => ch.forEach((_, t) => (ch[t]! += res[s]![c]![t + maxShift - offset]!))));
    }
    out.forEach((src) => src.forEach((ch) => ch.forEach((v, t) => (ch[t] = v / opts.shifts))));
    return out;
  }
  const segment = model.segmentSamples;
  const stride = Math.trunc((1 - opts.overlap) * segment);
  const half = Math.floor(segment / 2);
  const triangle = [...Array.from({ length: half }, (_, i) => i + 1), ...Array.from({ length: segment - half }, (_, i) => segment - half - i)];
  const peak = Math.max(...triangle);
  const weight = triangle.map((w) => (w / peak) ** opts.power);
  const out = zeros(mix.length);
  const sum = new Array<number>(mix.length).fill(0);
  for (let offset = 0; offset < mix.length; offset += stride) {
    const chunk = new RefChunk(mix, offset, segment);
    const input = chunk.padded(segment);
    const y = await model.run(Float32Array.from(input.flat()));
    const trim = Math.floor((segment - chunk.length) / 2);
    for (let t = 0; t < chunk.length; t++) {
      for (let s = 0; s < S; s++) {
        for (let c = 0; c < 2; c++) out[s]![c]![offset + t]! += weight[t]! * y[(s * 2 + c) * segment + trim + t]!;
      }
      sum[offset + t]! += weight[t]!;
    }
  }
  out.forEach((src) => src.forEach((ch) => ch.forEach((v, t) => (ch[t] = v / sum[t]!))));
  return out;
}

async function reference(model: SegmentModel, data: Float32Array, length: number, options: SeparateOptions): Promise<Estimate> {
  let mix: Planar = [Array.from(data.subarray(0, length)), Array.from(data.subarray(length, 2 * length))];
  let mean = 0;
  let scale = 1;
  if (model.normalize) {
    const mono = mix[0]!.map((l, t) => (l + mix[1]![t]!) / 2);
    mean = mono.reduce((a, b) => a + b, 0) / length;
    scale = Math.sqrt(mono.reduce((a, v) => a + (v - mean) ** 2, 0) / (length - 1)) + 1e-8;
    mix = mix.map((ch) => ch.map((v) => (v - mean) / scale));
  }
  const shifts = options.shifts ?? 0;
  const offsets = shiftOffsets(shifts, Math.trunc(0.5 * model.sampleRate), options.seed ?? 0);
  const out = await refApply(model, new RefChunk(mix, 0), {
    shifts,
    overlap: options.overlap ?? 0.25,
    power: options.transitionPower ?? 1,
    offsets,
  });
  return out.map((src) => src.map((ch) => ch.map((v) => v * scale + mean)));
}

describe('separate() against a plain transcription of Demucs apply_model', () => {
  const cases: { segment: number; length: number; options: SeparateOptions; normalize?: boolean }[] = [
    { segment: 400, length: 250, options: {} }, // shorter than a segment: one centred, padded chunk
    { segment: 400, length: 400, options: {} }, // exactly one segment
    { segment: 400, length: 1337, options: {} }, // several chunks, short last one
    { segment: 301, length: 1000, options: { overlap: 0.5 } }, // odd segment, odd padding split
    { segment: 400, length: 1337, options: { overlap: 0, transitionPower: 2 } },
    { segment: 400, length: 1337, options: { overlap: 0.9 } }, // many short chunks at the end
    { segment: 400, length: 1337, options: {}, normalize: true },
    { segment: 400, length: 1337, options: { shifts: 1, seed: 3 } },
    { segment: 300, length: 2100, options: { shifts: 3, seed: 7, overlap: 0.4 }, normalize: true },
    { segment: 600, length: 200, options: { shifts: 2, seed: 11 } }, // shifted views shorter and longer than a segment
  ];
  for (const { segment, length, options, normalize } of cases) {
    it(`segment ${segment}, length ${length}, ${JSON.stringify({ ...options, normalize })}`, async () => {
      const model = windowedGainModel(segment, [1, -0.5, 2], normalize);
      const data = testTrack(length);
      const ours = await separate(model, { data, length }, options);
      assert.equal(ours.length, 3);
      for (const stem of ours) assert.equal(stem.length, 2 * length);
      const ref = await reference(model, data, length, options);
      const difference = maxDifference(
        ours,
        ref.map((source) => source.flat()),
      );
      assert.ok(difference < 2e-5, `max difference ${difference}`);
    });
  }
});

describe('separate() invariants', () => {
  for (const length of [123, 400, 401, 2999]) {
    for (const normalize of [false, true]) {
      it(`an identity model gives back the input (length ${length}, normalize ${normalize})`, async () => {
        const data = testTrack(length, 5);
        const [out] = await separate(identityModel(400, normalize), { data, length }, { shifts: normalize ? 2 : 0 });
        assert.ok(out !== undefined);
        let worst = 0;
        for (let i = 0; i < 2 * length; i++) worst = Math.max(worst, Math.abs(out[i]! - data[i]!));
        assert.ok(worst < 1e-6, `max difference ${worst}`);
      });
    }
  }

  it('shifts are reproducible with a seed and differ across seeds', async () => {
    const model = windowedGainModel(300, [1]);
    const data = testTrack(1500);
    const run = (seed: number): Promise<Float32Array[]> => separate(model, { data, length: 1500 }, { shifts: 2, seed });
    const [a, b, c] = [await run(42), await run(42), await run(43)];
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
  });

  it('reports progress after every segment and stops when aborted', async () => {
    const model = windowedGainModel(400, [1]);
    const data = testTrack(2000);
    const seen: string[] = [];
    await separate(model, { data, length: 2000 }, { shifts: 2, onProgress: (p) => seen.push(`${p.done}/${p.total}`) });
    const total = Number(seen[0]?.split('/')[1]);
    assert.deepEqual(
      seen,
      Array.from({ length: total }, (_, i) => `${i + 1}/${total}`),
    );
    const controller = new AbortController();
    const aborted = separate(
      model,
      { data, length: 2000 },
      {
        signal: controller.signal,
        onProgress: (p) => p.done === 2 && controller.abort(),
      },
    );
    await assert.rejects(aborted, { name: 'AbortError' });
  });

  it('rejects empty tracks and bad options with a StemsplitError', async () => {
    const model = identityModel(100);
    await assert.rejects(separate(model, { data: new Float32Array(0), length: 0 }), (e) => isStemsplitError(e) && e.code === 'SEPARATION_FAILED');
    await assert.rejects(separate(model, { data: testTrack(10), length: 10 }, { overlap: 1 }), (e) => isStemsplitError(e) && e.code === 'USAGE');
  });
});

describe('separateStream: the track as a stream, never held whole', () => {
  /** The planar track as interleaved blocks of `block` frames, counting what has been read. */
  function streamOf(data: Float32Array, length: number, block: number, read: { frames: number }) {
    return (async function* () {
      for (let start = 0; start < length; start += block) {
        const count = Math.min(block, length - start);
        const out = new Float32Array(2 * count);
        for (let i = 0; i < count; i++) {
          out[2 * i] = data[start + i]!;
          out[2 * i + 1] = data[length + start + i]!;
        }
        read.frames += count;
        yield out;
      }
    })();
  }

  it('hands out stems while the track is still being read, identical to the whole-track result', async () => {
    const length = 20_000;
    const data = testTrack(length, 5);
    const model = windowedGainModel(400, [1, -0.5, 2], true);
    const options = { shifts: 2, seed: 4, overlap: 0.3 };
    const whole = await separate(model, { data, length }, options);
    const read = { frames: 0 };
    const streamed = model.sources.map(() => new Float32Array(2 * length));
    const readWhenWritten: number[] = [];
    let written = 0;
    await separateStream(
      model,
      { length, statistics: statisticsOf({ data, length }), frames: streamOf(data, length, 256, read) },
      (stems, frames) => {
        readWhenWritten.push(read.frames);
        stems.forEach((stem, s) => {
          streamed[s]!.set(stem.subarray(0, frames), written);
          streamed[s]!.set(stem.subarray(frames), length + written);
        });
        written += frames;
      },
      options,
    );
    assert.equal(written, length);
    // The first stems leave after about one segment plus the shift range (500 at 1 kHz) was read.
    assert.ok(readWhenWritten[0]! < 2_000, `first block written after ${readWhenWritten[0]} of ${length} frames were read`);
    assert.ok(readWhenWritten.length > 20, `${readWhenWritten.length} blocks`);
    for (const [s, stem] of whole.entries()) {
      let worst = 0;
      for (let i = 0; i < stem.length; i++) worst = Math.max(worst, Math.abs(stem[i]! - streamed[s]![i]!));
      assert.ok(worst < 1e-6, `source ${s}: max difference ${worst}`);
    }
  });

  it('a stream shorter or longer than announced fails with AUDIO_DECODE_FAILED, naming the cause', async () => {
    const length = 3_000;
    const data = testTrack(length);
    const model = identityModel(400);
    for (const announced of [length + 10, length - 10]) {
      await assert.rejects(
        separateStream(model, { length: announced, frames: streamOf(data, length, 512, { frames: 0 }) }, () => undefined),
        (error: unknown) => isStemsplitError(error) && error.code === 'AUDIO_DECODE_FAILED' && /did the file change/.test(error.message),
      );
    }
  });

  it("a normalising model needs the whole track's statistics; the one-pass meter gives the two-pass values", async () => {
    const length = 12_345;
    const data = testTrack(length, 9);
    await assert.rejects(
      separateStream(identityModel(400, true), { length, frames: streamOf(data, length, 512, { frames: 0 }) }, () => undefined),
      (error: unknown) => isStemsplitError(error) && /statistics/.test(error.message),
    );
    const meter = new NormalizationMeter();
    for await (const block of streamOf(data, length, 1000, { frames: 0 })) meter.add(block);
    assert.equal(meter.frames, length);
    assert.deepEqual(meter.result(), normalizationOf({ data, length }));
  });
});

describe('combineBag', () => {
  for (const segments of [
    [400, 400, 400],
    [400, 300, 512],
  ]) {
    it(`mixes members per source as Σ(wᵢ·yᵢ)/Σwᵢ, the same as mixing whole-track separations (segments ${segments.join(', ')})`, async () => {
      const members = [windowedGainModel(segments[0]!, [1, 2]), windowedGainModel(segments[1]!, [-1, 0.5]), windowedGainModel(segments[2]!, [3, 3])];
      const weights = [
        [1, 0],
        [1, 3],
        [0, 1],
      ];
      const data = testTrack(1234);
      const bagged = await separate(combineBag(members, weights, 'bag'), { data, length: 1234 });
      const each = await Promise.all(members.map((m) => separate(m, { data, length: 1234 })));
      for (let s = 0; s < 2; s++) {
        const total = weights.reduce((a, row) => a + row[s]!, 0);
        let worst = 0;
        for (let i = 0; i < 2 * 1234; i++) {
          const expected = each.reduce((a, out, m) => a + weights[m]![s]! * out[s]![i]!, 0) / total;
          worst = Math.max(worst, Math.abs(expected - bagged[s]![i]!));
        }
        assert.ok(worst < 1e-5, `source ${s}: max difference ${worst}`);
      }
    });
  }

  it('refuses members that disagree and weights that sum to zero', () => {
    assert.throws(() => combineBag([windowedGainModel(400, [1]), windowedGainModel(300, [1], true)], [[1], [1]]), { code: 'MODEL_INVALID' });
    assert.throws(() => combineBag([windowedGainModel(400, [1, 1])], [[1, 0]]), { code: 'MODEL_INVALID' });
  });
});

describe('bundled ONNX baselines', () => {
  const sampleRate = 44_100;
  /** 12 s: a centred 60 Hz bass, a centred 1 kHz "voice", a 9 kHz "hi-hat" and a hard-left 1 kHz "other". */
  function tones(length: number): Float32Array {
    const data = new Float32Array(2 * length);
    for (let t = 0; t < length; t++) {
      const phase = (f: number): number => Math.sin((2 * Math.PI * f * t) / sampleRate);
      const centre = 0.4 * phase(60) + 0.2 * phase(1000) + 0.1 * phase(9000);
      data[t] = centre + 0.2 * phase(1000.5);
      data[length + t] = centre - 0.2 * phase(1000.5);
    }
    return data;
  }
  const rms = (x: Float32Array): number => Math.sqrt(x.reduce((a, v) => a + v * v, 0) / x.length);

  for (const [name, sources] of [
    ['bundled-4s', ['drums', 'bass', 'other', 'vocals']],
    ['bundled-6s', ['drums', 'bass', 'other', 'vocals', 'guitar', 'piano']],
  ] as const) {
    it(`${name}: one stem per source, input length, stems sum to the mix, tones land in their bands`, async () => {
      const manifestPath = path.join('models', name, 'model.json');
      const manifest = await readModelManifest(manifestPath);
      assert.deepEqual(manifest.sources, sources);
      assert.match(manifest.description, /not a learned separator/);
      const model = await loadManifestModel(manifestPath, { intraOpThreads: 1 });
      try {
        const length = 12 * sampleRate + 7;
        const data = tones(length);
        const stems = await separate(model, { data, length }, { overlap: manifest.overlap });
        assert.equal(stems.length, sources.length);
        let worst = 0;
        for (let i = 0; i < 2 * length; i++) {
          worst = Math.max(worst, Math.abs(stems.reduce((a, stem) => a + stem[i]!, 0) - data[i]!));
        }
        assert.ok(worst < 1e-5, `stems differ from the mix by up to ${worst}`);
        const level = Object.fromEntries(sources.map((s, i) => [s, rms(stems[i]!)]));
        // Bass tone (RMS 0.28) in bass, the centred voice band in vocals, the side tone in other (or guitar/piano).
        assert.ok(level['bass']! > 0.25, JSON.stringify(level));
        assert.ok(level['vocals']! > 0.12 && level['vocals']! < 0.16, JSON.stringify(level));
        assert.ok(level['drums']! > 0.04 && level['drums']! < 0.08, JSON.stringify(level));
        const sideBands = (level['other'] ?? 0) + (level['guitar'] ?? 0) + (level['piano'] ?? 0);
        assert.ok(sideBands > 0.12, JSON.stringify(level));
      } finally {
        await model.dispose();
      }
    });
  }

  it('an ORT session also loads from bytes and runs plain float32 tensors', async () => {
    const handle = await createOrtSession(await readFile('models/bundled-4s/model.onnx'), { intraOpThreads: 1, memPattern: false });
    try {
      assert.deepEqual(handle.inputNames, ['mix']);
      const mix = new Float32Array(2 * 441_000).fill(0.25);
      const { stems } = await runTensors(handle, { mix: { data: mix, dims: [1, 2, 441_000] } });
      assert.deepEqual(stems?.dims, [1, 4, 2, 441_000]);
      // Mid-segment, a constant is pure DC: all of it is bass (the low-pass passes DC at unity gain).
      assert.ok(Math.abs(stems!.data[1 * 2 * 441_000 + 220_500]! - 0.25) < 1e-6);
      await assert.rejects(runTensors(handle, { mix: { data: mix.subarray(0, 10), dims: [1, 2, 5] } }), { code: 'SEPARATION_FAILED' });
    } finally {
      await handle.release();
    }
  });

  it('a profiled session released twice (by its model, then on the way out) writes one profile and does not throw', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'stemsplit-profile-'));
    process.env[ORT_PROFILE_ENV] = path.join(dir, 'run');
    try {
      const handle = await createOrtSession('models/bundled-4s/model.onnx', { intraOpThreads: 1 });
      await handle.release();
      await handle.release();
      const profiles = (await readdir(dir)).filter((name) => name.endsWith('.json'));
      assert.equal(profiles.length, 1);
    } finally {
      delete process.env[ORT_PROFILE_ENV];
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('a manifest with a bad field fails with MODEL_INVALID naming the field', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'stemsplit-manifest-'));
    try {
      const manifest = JSON.parse(JSON.stringify(await readModelManifest('models/bundled-4s/model.json')));
      manifest.segmentSamples = -3;
      await writeFile(path.join(dir, 'model.json'), JSON.stringify(manifest));
      await assert.rejects(
        loadManifestModel(path.join(dir, 'model.json')),
        (e) => isStemsplitError(e) && e.code === 'MODEL_INVALID' && e.message.includes('"segmentSamples"'),
      );
      manifest.segmentSamples = 441000;
      await writeFile(path.join(dir, 'model.json'), JSON.stringify(manifest));
      await writeFile(path.join(dir, 'model.onnx'), 'not a graph');
      await assert.rejects(loadManifestModel(path.join(dir, 'model.json')), (e) => isStemsplitError(e) && e.code === 'MODEL_INVALID');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
