/**
 * The engine's FFT and HTDemucs spectrogram code outside the graph: the FFT against a
 * direct DFT, and `_spec` followed by `_ispec` giving the signal back away from the edges
 * (at the edges HTDemucs' inverse is not exact by design: the zero padding frames count
 * in the window envelope, and the fixtures check that part).
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Fft } from '../src/dsp/fft.js';
import { SegmentStft } from '../src/demucs/stft.js';

function directDft(re: Float64Array, im: Float64Array, sign: 1 | -1): [Float64Array, Float64Array] {
  const n = re.length;
  const outRe = new Float64Array(n);
  const outIm = new Float64Array(n);
  for (let k = 0; k < n; k++) {
    for (let t = 0; t < n; t++) {
      const angle = (sign * 2 * Math.PI * ((k * t) % n)) / n;
      outRe[k] = (outRe[k] as number) + (re[t] as number) * Math.cos(angle) - (im[t] as number) * Math.sin(angle);
      outIm[k] = (outIm[k] as number) + (re[t] as number) * Math.sin(angle) + (im[t] as number) * Math.cos(angle);
    }
  }
  return [outRe, outIm];
}

describe('demucs FFT', () => {
  for (const size of [16, 32, 64, 128, 2048, 4096, 8192]) {
    it(`matches a direct DFT at size ${size} (radix ${Math.log2(size) % 2 === 0 ? 4 : 2}), both directions`, () => {
      const re = Float64Array.from({ length: size }, (_, i) => Math.sin(0.7 * i) + (i % 5));
      const im = Float64Array.from({ length: size }, (_, i) => Math.cos(0.3 * i * i));
      const fft = new Fft(size);
      for (const [sign, run] of [
        [-1, (r: Float64Array, i: Float64Array) => fft.forward(r, i)],
        [1, (r: Float64Array, i: Float64Array) => fft.inverse(r, i)],
      ] as const) {
        const [expectRe, expectIm] = directDft(re, im, sign);
        const gotRe = Float64Array.from(re);
        const gotIm = Float64Array.from(im);
        run(gotRe, gotIm);
        for (let k = 0; k < size; k++) {
          assert.ok(Math.abs((gotRe[k] as number) - (expectRe[k] as number)) < 1e-9, `re[${k}]`);
          assert.ok(Math.abs((gotIm[k] as number) - (expectIm[k] as number)) < 1e-9, `im[${k}]`);
        }
      }
    });
  }
});

describe('demucs spectrogram', () => {
  it('inverts itself away from the segment edges, normalization included', () => {
    const nfft = 256;
    const length = 5000;
    const stft = new SegmentStft(nfft, length);
    assert.equal(stft.frames, Math.ceil(length / (nfft / 4)));
    const signal = Float32Array.from({ length: 2 * length }, (_, i) => Math.sin(0.013 * i) + 0.25 * Math.cos(0.29 * i + (i >= length ? 1 : 0)));
    const spec = new Float32Array(4 * stft.freqs * stft.frames);
    const eps = 1e-5;
    const stats = stft.analyze(signal, spec, eps);
    let sum = 0;
    for (const value of spec) sum += value;
    assert.ok(Math.abs(sum / spec.length) < 1e-6, 'the spectrogram comes out normalized');

    const out = new Float32Array(2 * length);
    const silence = new Float32Array(2 * length);
    stft.synthesize(
      {
        spec: { data: spec, phases: 1, planes: 4, rows: stft.freqs, firstPlane: 0 },
        specStats: { mean: stats.mean, std: eps + stats.std },
        wave: { data: silence, phases: 1, planes: 2, rows: length, firstPlane: 0 },
        waveStats: { mean: 0, std: 1 },
      },
      out,
      0,
    );
    for (let channel = 0; channel < 2; channel++) {
      for (let i = nfft; i < length - nfft; i++) {
        const at = channel * length + i;
        assert.ok(Math.abs((out[at] as number) - (signal[at] as number)) < 1e-5, `channel ${channel} sample ${i}`);
      }
    }
  });
});
