/**
 * The evaluation metrics behind docs/quality.md: the MDX SDR and the leakage projection
 * ("where each real stem went"), checked on signals whose answers are known by construction.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { projection, sdr } from './support/eval-metrics.js';

/** Deterministic pseudo-random signal (a 32-bit LCG), so the test needs no fixtures. */
function noise(length: number, seed: number): Float32Array {
  const out = new Float32Array(length);
  let state = seed >>> 0;
  for (let i = 0; i < length; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state / 2 ** 31 - 1;
  }
  return out;
}

function mix(parts: readonly [number, Float32Array][]): Float32Array {
  const out = new Float32Array(parts[0]?.[1].length ?? 0);
  for (const [gain, signal] of parts) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) + gain * (signal[i] ?? 0);
  return out;
}

describe('sdr', () => {
  test('half the amplitude is 6.02 dB', () => {
    const reference = noise(1000, 1);
    assert.ok(Math.abs(sdr(reference, mix([[0.5, reference]])) - 10 * Math.log10(4)) < 1e-4);
  });

  test('silence against silence is 0 dB, not NaN', () => {
    assert.equal(sdr(new Float32Array(10), new Float32Array(10)), 0);
  });
});

describe('projection', () => {
  const references = [1, 2, 3, 4].map((seed) => noise(20_000, seed));

  test('recovers how much of each reference an estimate holds', () => {
    const estimate = mix([
      [0.7, references[0] as Float32Array],
      [0.2, references[2] as Float32Array],
    ]);
    const { coefficients, unexplained } = projection(estimate, references);
    [0.7, 0, 0.2, 0].forEach((expected, j) => assert.ok(Math.abs((coefficients[j] ?? NaN) - expected) < 1e-3, `c${j} = ${coefficients[j]}`));
    assert.ok(unexplained < 1e-6, `unexplained ${unexplained}`);
  });

  test('counts what no reference explains as unexplained', () => {
    const artefact = noise(20_000, 99);
    const estimate = mix([
      [1, references[1] as Float32Array],
      [1, artefact],
    ]);
    const { coefficients, unexplained } = projection(estimate, references);
    assert.ok(Math.abs((coefficients[1] ?? NaN) - 1) < 0.05, `c1 = ${coefficients[1]}`);
    assert.ok(unexplained > 0.4 && unexplained < 0.6, `unexplained ${unexplained}`);
  });
});
