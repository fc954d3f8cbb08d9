/**
 * A signal of zeros stays exactly zero through every transform that packs two real signals into one
 * complex FFT (issue 49): torch.stft's and torch.istft's two frames (dsp/stft.ts, the RoFormer, SCNet, MDX23C and MDX-Net
 * spectra), and the two channels of HTDemucs' spectrogram (demucs/stft.ts), VR's librosa.stft
 * (vr/stft.ts) and the spectral ensemble (ensemble/spectral.ts, through the shared `silentParts`).
 * Unpacked without care, the silent one gets ~1e-16 of its partner's spectrum, which RMSNorm
 * scales up to 1e-2 in a RoFormer.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Fft, SILENT_FIRST, SILENT_SECOND, silentParts, unpackTwoReal } from '../src/dsp/fft.js';
import { TorchStft } from '../src/dsp/stft.js';
import { SegmentStft } from '../src/demucs/stft.js';
import { stft as librosaStft } from '../src/vr/stft.js';

function noise(length: number, seed: number): Float32Array {
  let state = seed;
  return Float32Array.from({ length }, () => {
    state = (state * 1103515245 + 12345) % 2 ** 31;
    return state / 2 ** 31 - 0.5;
  });
}

/** The values of `values` that are not exactly zero, as a count. */
function nonZero(values: ArrayLike<number>): number {
  let count = 0;
  for (let i = 0; i < values.length; i++) if (values[i] !== 0) count++;
  return count;
}

describe('packed transforms keep a silent signal exactly silent', () => {
  it('silentParts and unpackTwoReal: zeros for the silent one, its partner as a transform of its own', () => {
    const size = 64;
    const signal = Float64Array.from(noise(size, 3));
    assert.equal(silentParts(signal.slice(), new Float64Array(size)), SILENT_SECOND);
    assert.equal(silentParts(new Float64Array(size), signal.slice()), SILENT_FIRST);
    assert.equal(silentParts(new Float64Array(size), new Float64Array(size)), SILENT_FIRST | SILENT_SECOND);
    assert.equal(silentParts(signal.slice(), signal.slice()), 0);
    // The partner's residue without the flag, none with it.
    const re = new Float64Array(size);
    const im = signal.slice();
    const silent = silentParts(re, im);
    new Fft(size).forward(re, im);
    const bin = new Float64Array(4);
    let residue = 0;
    for (let k = 0; k <= size / 2; k++) {
      unpackTwoReal(re, im, k, bin);
      residue = Math.max(residue, Math.abs(bin[0] as number), Math.abs(bin[1] as number));
      unpackTwoReal(re, im, k, bin, silent);
      assert.deepEqual([bin[0], bin[1]], [0, 0]);
    }
    assert.ok(residue > 0, 'the test signal leaves a residue when unpacked without the flag');
  });

  it('torch.stft (TorchStft): frames of zeros next to frames of sound, either of a pair', () => {
    const nFft = 512;
    const hop = 128;
    const length = 16 * nFft;
    const signal = noise(length, 5);
    // Silence from past the middle on: frames centred far enough in see only zeros (the reflection at the end
    // reflects zeros). The first silent frame is odd, so it shares its FFT with a sounding one.
    const quiet = length / 2 + hop;
    signal.fill(0, quiet);
    const transform = new TorchStft({ nFft, hop, winLength: nFft, window: 'hann', normalized: false }, length);
    const real = new Float32Array(transform.bins * transform.frames);
    const imag = new Float32Array(transform.bins * transform.frames);
    transform.analyze(signal, real, imag);
    const firstSilent = Math.ceil((quiet + nFft / 2) / hop);
    assert.equal(firstSilent % 2, 1, 'the first silent frame is the second of its pair');
    assert.ok(transform.frames - firstSilent >= 4, 'silent frames of both parities');
    for (let k = 0; k < transform.bins; k++) {
      const row = k * transform.frames;
      assert.equal(nonZero(real.subarray(row + firstSilent, row + transform.frames)), 0, `bin ${k}: real`);
      assert.equal(nonZero(imag.subarray(row + firstSilent, row + transform.frames)), 0, `bin ${k}: imaginary`);
    }
    // The sounding frames are still there.
    assert.ok(nonZero(real.subarray(0, firstSilent - 2)) > 0);
  });

  it('torch.istft (TorchStft.synthesize): samples only silent frames reach stay exactly zero', () => {
    const nFft = 512;
    const hop = 128;
    const length = 16 * nFft;
    const transform = new TorchStft({ nFft, hop, winLength: nFft, window: 'hann', normalized: false, outputLength: length }, length);
    const { bins, frames } = transform;
    // Frames from an odd one on are zero spectra, the first of them sharing its inverse FFT with a sounding frame.
    const firstSilent = 2 * Math.floor(frames / 4) + 1;
    const real = noise(bins * frames, 11);
    const imag = noise(bins * frames, 13);
    for (let k = 0; k < bins; k++) {
      real.fill(0, k * frames + firstSilent, (k + 1) * frames);
      imag.fill(0, k * frames + firstSilent, (k + 1) * frames);
    }
    const out = new Float32Array(length);
    transform.synthesize(real, imag, out);
    const quiet = (firstSilent - 1) * hop + nFft / 2;
    assert.equal(nonZero(out.subarray(quiet)), 0);
    assert.ok(nonZero(out.subarray(0, quiet)) > 0);
  });

  it("HTDemucs' spectrogram (SegmentStft): a silent channel beside a sounding one", () => {
    const nfft = 512;
    const length = 8 * nfft;
    const signal = new Float32Array(2 * length);
    signal.set(noise(length, 7), length); // left silent, right sounding
    const transform = new SegmentStft(nfft, length);
    const plane = transform.freqs * transform.frames;
    const out = new Float32Array(4 * plane);
    transform.analyze(signal, out, 0, false);
    assert.equal(nonZero(out.subarray(0, 2 * plane)), 0, 'the left channel (real and imaginary planes)');
    assert.ok(nonZero(out.subarray(2 * plane)) > 0);
  });

  it("VR's librosa.stft: a silent channel beside a sounding one", () => {
    const nFft = 512;
    const length = 8 * nFft;
    const spec = librosaStft([Float64Array.from(noise(length, 9)), new Float64Array(length)], nFft, nFft / 4);
    const half = spec.re.length / 2; // left bins first, then right
    assert.equal(nonZero(spec.re.subarray(half)), 0, 'the right channel, real parts');
    assert.equal(nonZero(spec.im.subarray(half)), 0, 'the right channel, imaginary parts');
    assert.ok(nonZero(spec.re.subarray(0, half)) > 0);
  });
});
