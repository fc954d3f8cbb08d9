/**
 * Which STFT bins feed each band. BS-RoFormer: consecutive runs (`freqs_per_bands`).
 * Mel-Band RoFormer: the support of librosa's Slaney mel filter bank (htk=False, norm='slaney',
 * fmin 0, fmax sr/2), computed here in float64 as librosa does and cast to float32, with
 * bin 0 forced into the first band and the Nyquist bin into the last, as the model does.
 */
import type { RoformerConfig } from './config.js';

/** Bins of each band, ascending within a band. */
export type BandBins = readonly (readonly number[])[];

export function bandBins(config: RoformerConfig): BandBins {
  if (config.type === 'bs_roformer') {
    const bands: number[][] = [];
    let next = 0;
    for (const size of config.freqsPerBands) {
      bands.push(Array.from({ length: size }, (_, i) => next + i));
      next += size;
    }
    return bands;
  }
  return melBandBins(config.sampleRate, config.nFft, config.numBands);
}

export function melBandBins(sampleRate: number, nFft: number, numBands: number): BandBins {
  const weights = melFilterBank(sampleRate, nFft, numBands);
  const bins = nFft / 2 + 1;
  const bands: number[][] = [];
  for (let b = 0; b < numBands; b++) {
    const row = weights[b] as Float32Array;
    if (b === 0) row[0] = 1;
    if (b === numBands - 1) row[bins - 1] = 1;
    const members: number[] = [];
    for (let k = 0; k < bins; k++) if ((row[k] as number) > 0) members.push(k);
    bands.push(members);
  }
  const covered = new Uint8Array(bins);
  for (const band of bands) for (const k of band) covered[k] = 1;
  if (covered.includes(0)) throw new Error(`mel bands (${numBands} for n_fft ${nFft}) leave some bins uncovered`);
  return bands;
}

/** librosa.filters.mel(sr, n_fft, n_mels) as float32 rows (only the support matters here). */
function melFilterBank(sampleRate: number, nFft: number, numBands: number): Float32Array[] {
  const bins = nFft / 2 + 1;
  const binSpacing = 1 / (nFft * (1 / sampleRate)); // numpy's rfftfreq: k · 1/(n·d)
  const fftFreqs = Array.from({ length: bins }, (_, k) => k * binSpacing);
  const melPoints = linspace(hzToMel(0), hzToMel(sampleRate / 2), numBands + 2).map(melToHz);
  const rows: Float32Array[] = [];
  for (let b = 0; b < numBands; b++) {
    const lowerWidth = (melPoints[b + 1] as number) - (melPoints[b] as number);
    const upperWidth = (melPoints[b + 2] as number) - (melPoints[b + 1] as number);
    const norm = 2 / ((melPoints[b + 2] as number) - (melPoints[b] as number));
    const row = new Float32Array(bins);
    for (let k = 0; k < bins; k++) {
      const lower = -((melPoints[b] as number) - (fftFreqs[k] as number)) / lowerWidth;
      const upper = ((melPoints[b + 2] as number) - (fftFreqs[k] as number)) / upperWidth;
      row[k] = Math.max(0, Math.min(lower, upper)) * norm;
    }
    rows.push(row);
  }
  return rows;
}

const F_SP = 200 / 3;
const MIN_LOG_HZ = 1000;
const MIN_LOG_MEL = MIN_LOG_HZ / F_SP;
const LOG_STEP = Math.log(6.4) / 27;

function hzToMel(hz: number): number {
  return hz >= MIN_LOG_HZ ? MIN_LOG_MEL + Math.log(hz / MIN_LOG_HZ) / LOG_STEP : hz / F_SP;
}

function melToHz(mel: number): number {
  return mel >= MIN_LOG_MEL ? MIN_LOG_HZ * Math.exp(LOG_STEP * (mel - MIN_LOG_MEL)) : F_SP * mel;
}

/** numpy.linspace with the endpoint: start + i·step, the last value exactly `stop`. */
function linspace(start: number, stop: number, count: number): number[] {
  const step = (stop - start) / (count - 1);
  return Array.from({ length: count }, (_, i) => (i === count - 1 ? stop : i * step + start));
}
