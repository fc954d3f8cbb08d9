/**
 * The resamplers the VR params not at 44.1 kHz need (src/vr/resample*.ts) against figures of the
 * libraries themselves: a 0.5-amplitude sine, 1.5 s at the source rate, resampled by librosa 0.11's
 * `resample` over libsamplerate 0.2.2, resampy 0.4.3 and python-soxr 1.1.0, and the SNR of the
 * result against the ideal sine over the interior and over the first and last 50 ms
 * (`python3 scripts/bench/vr_resamplers_ref.py DIR --sines FILE`, the figures copied below). The
 * edges are where a resampler's padding, alignment and flush show; the interior where its
 * filter does. Also libsamplerate's medium and best converters against the VR fixtures' own sine
 * checks, as test/vr.test.ts checks the fastest one, and the coefficient tables' published values.
 * Through `stemsplit split`: params at 32 and 48 kHz on a network whose mask is 0.5 (its output
 * layer zero), whose two stems are then equal and give back what the params keep of the mix.
 */
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { v50Tensors, writeVrPth } from './support/vr-state-dict.js';
import { runCli } from './support/process.js';
import { librosaResample, librosaResampler, type LibrosaResType } from '../src/vr/resample.js';
import { libsamplerateSinc, sincCoefficients, type SincConverter } from '../src/vr/resample-libsamplerate.js';
import { fixtureDir } from './support/fixtures.js';
import { decodePlanar, writeFloatWav } from './support/reference-audio.js';
import { tempDir } from './support/server.js';

const work = tempDir('stemsplit-vr-resamplers-');
after(() => rmSync(work, { recursive: true, force: true }));

interface SineFigures {
  readonly seconds: number;
  readonly out_frames: number;
  readonly interior_snr_db: number;
  readonly first_50ms_snr_db: number;
  readonly last_50ms_snr_db: number;
}

/** scripts/bench/vr_resamplers_ref.py --sines, on the libraries (label: "from->to frequencyHz res_type dtype"). */
const LIBRARY_SINES: Readonly<Record<string, SineFigures>> = {
  '44100->16000 2400.0Hz sinc_best float32': { seconds: 1.5, out_frames: 24000, interior_snr_db: 137.13, first_50ms_snr_db: 46.45, last_50ms_snr_db: 27.86 },
  '44100->33075 4961.2Hz sinc_best float32': { seconds: 1.5, out_frames: 49613, interior_snr_db: 146.69, first_50ms_snr_db: 53.46, last_50ms_snr_db: 29.19 },
  '44100->32000 4800.0Hz kaiser_fast float32': { seconds: 1.5, out_frames: 48000, interior_snr_db: 63.08, first_50ms_snr_db: 49.81, last_50ms_snr_db: 54.9 },
  '44100->32000 4800.0Hz sinc_medium float32': { seconds: 1.5, out_frames: 48000, interior_snr_db: 124.51, first_50ms_snr_db: 51.36, last_50ms_snr_db: 57.43 },
  '44100->48000 6615.0Hz sinc_medium float32': { seconds: 1.5, out_frames: 72000, interior_snr_db: 129.02, first_50ms_snr_db: 54.49, last_50ms_snr_db: 54.96 },
  '32000->6000 900.0Hz sinc_fastest float32': { seconds: 1.5, out_frames: 9000, interior_snr_db: 147.28, first_50ms_snr_db: 39.75, last_50ms_snr_db: 49.09 },
  '48000->6000 900.0Hz sinc_fastest float32': { seconds: 1.5, out_frames: 9000, interior_snr_db: 142.23, first_50ms_snr_db: 39.67, last_50ms_snr_db: 49.16 },
  '6000->32000 900.0Hz sinc_fastest float64': { seconds: 1.5, out_frames: 48000, interior_snr_db: 119.04, first_50ms_snr_db: 44.04, last_50ms_snr_db: 44.32 },
  '6000->48000 900.0Hz sinc_fastest float64': { seconds: 1.5, out_frames: 72000, interior_snr_db: 119.0, first_50ms_snr_db: 44.13, last_50ms_snr_db: 44.32 },
  '16000->44100 2400.0Hz soxr_hq float64': { seconds: 1.5, out_frames: 66150, interior_snr_db: 133.81, first_50ms_snr_db: 47.61, last_50ms_snr_db: 47.99 },
  '32000->44100 4800.0Hz soxr_hq float64': { seconds: 1.5, out_frames: 66150, interior_snr_db: 133.81, first_50ms_snr_db: 51.9, last_50ms_snr_db: 51.77 },
  '33075->44100 4961.2Hz soxr_hq float64': { seconds: 1.5, out_frames: 66150, interior_snr_db: 132.82, first_50ms_snr_db: 51.99, last_50ms_snr_db: 31.02 },
  '48000->44100 6615.0Hz soxr_hq float64': { seconds: 1.5, out_frames: 66150, interior_snr_db: 132.67, first_50ms_snr_db: 57.24, last_50ms_snr_db: 60.34 },
};

/**
 * Whether stemsplit's figure is the library's: to 0.01 dB, except soxr's interior, where the
 * figure (about 133 dB) measures soxr's own float32 FFT rounding, which stemsplit's float64 sums
 * do not add: there it must be at least the library's and within 15 dB of it.
 */
function agrees(resType: string, part: string, actual: number, wanted: number): boolean {
  if (resType === 'soxr_hq' && part === 'interior') return actual >= wanted - 0.01 && actual <= wanted + 15;
  return Math.abs(actual - wanted) <= 0.01;
}

function sineSnrs(output: Float64Array, frequency: number, rate: number): [number, number, number] {
  const edge = Math.round(0.05 * rate);
  const snr = (a: number, b: number): number => {
    let signal = 0;
    let noise = 0;
    for (let j = a; j < b; j++) {
      const ideal = 0.5 * Math.sin((2 * Math.PI * frequency * j) / rate);
      signal += ideal ** 2;
      noise += (ideal - (output[j] as number)) ** 2;
    }
    return 10 * Math.log10(signal / noise);
  };
  return [snr(edge, output.length - edge), snr(0, edge), snr(output.length - edge, output.length)];
}

describe('VR resamplers against their libraries', () => {
  for (const [label, expected] of Object.entries(LIBRARY_SINES)) {
    it(`${label}: the library's length and sine figures`, () => {
      const match = /^(\d+)->(\d+) ([\d.]+)Hz (\w+) (float32|float64)$/.exec(label);
      assert.ok(match, label);
      const [from, to, frequency] = [Number(match[1]), Number(match[2]), Number(match[3])];
      const resType = match[4] as LibrosaResType;
      const float32 = match[5] === 'float32';
      const n = Math.trunc(from * expected.seconds);
      const input = new Float64Array(n).map((_, i) => {
        const v = 0.5 * Math.sin((2 * Math.PI * frequency * i) / from);
        return float32 ? Math.fround(v) : v;
      });
      const output = librosaResample(input, from, to, resType, float32);
      assert.equal(output.length, expected.out_frames, label);
      const [interior, first, last] = sineSnrs(output, frequency, to);
      const check = (name: string, actual: number, wanted: number): void => {
        assert.ok(agrees(resType, name, actual, wanted), `${label} ${name}: ${actual.toFixed(2)} dB, the library ${wanted}`);
      };
      check('interior', interior, expected.interior_snr_db);
      check('first 50 ms', first, expected.first_50ms_snr_db);
      check('last 50 ms', last, expected.last_50ms_snr_db);
    });
  }

  // Each label's resampler fed in blocks of odd sizes (rate.ts streams the track in and the stems out).
  for (const label of Object.keys(LIBRARY_SINES)) {
    it(`${label}: fed in blocks of 1 to 4099 samples, what it gives fed at once, bit for bit`, () => {
      const [, from, to, , resType, dtype] = /^(\d+)->(\d+) ([\d.]+)Hz (\w+) (float32|float64)$/.exec(label) as unknown as [
        string,
        string,
        string,
        string,
        LibrosaResType,
        string,
      ];
      let seed = 3;
      const input = Float64Array.from({ length: Number(from) }, (_, i) => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return 0.5 * Math.sin(i / 40) + 0.2 * (seed / 2 ** 31 - 0.5);
      });
      const atOnce = librosaResample(input, Number(from), Number(to), resType, dtype === 'float32');
      const stream = librosaResampler(input.length, Number(from), Number(to), resType, dtype === 'float32');
      const blocks: Float64Array[] = [];
      const sizes = [1, 4099, 3, 517, 29, 2048];
      for (let at = 0, k = 0; at < input.length; k++) {
        const size = Math.min(input.length - at, sizes[k % sizes.length] as number);
        blocks.push(stream.push(input.subarray(at, at + size)));
        at += size;
      }
      const fed = Float64Array.from(blocks.flatMap((block) => [...block]));
      assert.equal(fed.length, atOnce.length);
      assert.equal(
        fed.reduce((count, v, i) => count + (v === atOnce[i] ? 0 : 1), 0),
        0,
        `${label}: samples that differ`,
      );
    });
  }

  const fixtures = fixtureDir('vr');
  it("reproduces libsamplerate's medium and best converters on the VR fixtures' sine checks (to 0.01 dB)", {
    skip: fixtures === undefined ? 'no fixtures' : false,
  }, () => {
    const manifest = JSON.parse(readFileSync(path.join(fixtures as string, 'fixtures.json'), 'utf8')) as {
      readonly self_checks: {
        readonly libsamplerate_sines: Record<
          string,
          { readonly out_frames: number; readonly interior_snr_db: number; readonly first_50ms_snr_db: number; readonly last_50ms_snr_db: number }
        >;
      };
    };
    let checked = 0;
    for (const [label, expected] of Object.entries(manifest.self_checks.libsamplerate_sines)) {
      const match = /^(\d+)->(\d+) ([\d.]+)Hz (sinc_medium|sinc_best)$/.exec(label);
      if (match === null) continue;
      const [from, to, frequency] = [Number(match[1]), Number(match[2]), Number(match[3])];
      const input = new Float64Array(4 * from).map((_, i) => Math.fround(0.5 * Math.sin((2 * Math.PI * frequency * i) / from)));
      const output = libsamplerateSinc(input, to / from, match[4] as SincConverter);
      assert.equal(output.length, expected.out_frames, label);
      const [interior, first, last] = sineSnrs(output, frequency, to);
      assert.ok(Math.abs(interior - expected.interior_snr_db) < 0.01, `${label} interior: ${interior.toFixed(2)} vs ${expected.interior_snr_db}`);
      assert.ok(Math.abs(first - expected.first_50ms_snr_db) < 0.01, `${label} first 50 ms: ${first.toFixed(2)} vs ${expected.first_50ms_snr_db}`);
      assert.ok(Math.abs(last - expected.last_50ms_snr_db) < 0.01, `${label} last 50 ms: ${last.toFixed(2)} vs ${expected.last_50ms_snr_db}`);
      checked++;
    }
    assert.equal(checked, 12);
  });

  it("derives libsamplerate's coefficient tables: the published first, middle and last values (as float)", () => {
    // mid_qual_coeffs.h and high_qual_coeffs.h (libsamplerate 0.2.2), three entries each.
    const published: Readonly<Record<'sinc_medium' | 'sinc_best', readonly (readonly [number, number])[]>> = {
      sinc_medium: [
        [0, 9.190632349861385109e-1],
        [1, 9.190579273831620544e-1],
        [11218, 1.767250508283470036e-5],
        [22436, -3.536362300736567822e-9],
      ],
      sinc_best: [
        [0, 9.65728423539374603e-1],
        [1, 9.657281621412726613e-1],
        [148127, 2.707273575695796431e-4],
        [148150, 3.013135299016162318e-4],
      ],
    };
    for (const [converter, entries] of Object.entries(published) as [SincConverter, readonly (readonly [number, number])[]][]) {
      const table = sincCoefficients(converter);
      assert.equal(table[table.length - 1], 0, `${converter}: a final zero`);
      for (const [index, value] of entries) assert.equal(table[index], Math.fround(value), `${converter}[${index}]`);
    }
  });
});

describe('VR params not at 44.1 kHz through `stemsplit split`', () => {
  /** Two seconds of a stereo mix below 7 kHz (what every params file keeps), float32. */
  function mix(): Float32Array {
    const length = 2 * 44_100;
    const planar = new Float32Array(2 * length);
    for (let c = 0; c < 2; c++) {
      for (let i = 0; i < length; i++) {
        const t = i / 44_100;
        planar[c * length + i] =
          0.3 * Math.sin(2 * Math.PI * 220 * t + c) + 0.15 * Math.sin(2 * Math.PI * 1375 * t) + 0.05 * Math.sin(2 * Math.PI * (3000 + 1000 * t) * t);
      }
    }
    return planar;
  }

  // Loading with kaiser_fast (32000) and sinc_medium then sinc_fastest (48000), back with soxr.
  for (const param of ['1band_sr32000_hl512', '2band_48000']) {
    it(`${param}: equal stems of the track's length that sum back to the mix`, () => {
      const dir = path.join(work, param);
      mkdirSync(dir, { recursive: true });
      const model = path.join(dir, 'half.pth');
      writeVrPth(model, v50Tensors(4, false, 5), { output: false });
      writeFileSync(path.join(dir, 'half.json'), JSON.stringify({ vr_model_param: param, primary_stem: 'Vocals' }));
      const song = path.join(dir, 'song.wav');
      const input = mix();
      writeFloatWav(song, input, 2);
      const out = path.join(dir, 'out');
      const result = runCli(['split', song, '--model', model, '--vr-aggression', '0', '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: path.join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: path.join(dir, 'cache'),
      });
      assert.equal(result.status, 0, result.stderr);
      const [vocals, instrumental] = ['vocals', 'instrumental'].map((stem) => decodePlanar(path.join(out, 'song', `${stem}.wav`), 2)) as [
        Float32Array,
        Float32Array,
      ];
      assert.equal(vocals.length, input.length, `${param}: the track's length`);
      assert.ok(
        vocals.every((v, i) => v === instrumental[i]),
        `${param}: a mask of 0.5 makes the two stems equal`,
      );
      // The official stems end up to a hop before the track: compare the first 1.9 s of each channel.
      const length = input.length / 2;
      let signal = 0;
      let noise = 0;
      for (let c = 0; c < 2; c++) {
        for (let i = 0; i < 1.9 * 44_100; i++) {
          const reference = input[c * length + i] as number;
          signal += reference ** 2;
          noise += (reference - 2 * (vocals[c * length + i] as number)) ** 2;
        }
      }
      const snr = 10 * Math.log10(signal / noise);
      console.log(`${param} through split: the stems sum to the mix at ${snr.toFixed(1)} dB`);
      assert.ok(snr >= 20, `${param}: ${snr.toFixed(1)} dB`);
    });
  }
});
