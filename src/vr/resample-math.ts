/** The small numerics the VR resamplers share: Bessel's I₀, the Kaiser window, sinc and C's lrint. */

/** Modified Bessel function I₀ by its power series Σ ((x/2)^k / k!)², to double precision for the βs used here (≤ 17). */
export function besselI0(x: number): number {
  const q = (x * x) / 4;
  let term = 1;
  let sum = 1;
  for (let k = 1; k < 500; k++) {
    term *= q / (k * k);
    sum += term;
    if (term < sum * 1e-17) break;
  }
  return sum;
}

/** Symmetric Kaiser window (scipy.signal.windows.kaiser with sym=True; Octave's kaiser). */
export function kaiserWindow(length: number, beta: number): Float64Array {
  const alpha = (length - 1) / 2;
  const out = new Float64Array(length);
  const norm = besselI0(beta);
  for (let n = 0; n < length; n++) {
    const r = (n - alpha) / alpha;
    out[n] = besselI0(beta * Math.sqrt(Math.max(0, 1 - r * r))) / norm;
  }
  return out;
}

/** sin(πx)/(πx), 1 at 0 (numpy's and Octave's sinc). */
export function sinc(x: number): number {
  if (x === 0) return 1;
  const y = Math.PI * x;
  return Math.sin(y) / y;
}

/** C's lrint in the default rounding mode: to nearest, ties to even. */
export function lrint(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
