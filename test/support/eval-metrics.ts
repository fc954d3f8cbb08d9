/** Separation metrics for scripts/eval: the Music Demixing Challenge SDR and a leakage projection. */

/** SDR = 10·log10((Σ s² + 1e-7) / (Σ (s − ŝ)² + 1e-7)), in dB, over the shorter of the two signals. */
export function sdr(reference: Float32Array, estimate: Float32Array): number {
  let num = 0;
  let den = 0;
  const n = Math.min(reference.length, estimate.length);
  for (let i = 0; i < n; i++) {
    const r = reference[i] ?? 0;
    const e = estimate[i] ?? 0;
    num += r * r;
    den += (r - e) * (r - e);
  }
  return 10 * Math.log10((num + 1e-7) / (den + 1e-7));
}

export function energy(signal: Float32Array): number {
  let total = 0;
  for (const v of signal) total += v * v;
  return total;
}

/**
 * Where each reference stem went: least-squares coefficients c of one estimate on the references,
 * estimate ≈ Σ_j c_j · reference_j (all samples, both channels), and the share of the estimate's energy
 * that no reference explains (artefacts). A perfect separation has c = 1 on its own stem and 0 elsewhere.
 */
export function projection(estimate: Float32Array, references: readonly Float32Array[]): { coefficients: number[]; unexplained: number } {
  const k = references.length;
  const gram = references.map((a) => references.map((b) => dot(a, b)));
  const rhs = references.map((a) => dot(a, estimate));
  const coefficients = solve(gram, rhs);
  let residual = 0;
  for (let i = 0; i < estimate.length; i++) {
    let fit = 0;
    for (let j = 0; j < k; j++) fit += (coefficients[j] ?? 0) * (references[j]?.[i] ?? 0);
    residual += ((estimate[i] ?? 0) - fit) ** 2;
  }
  return { coefficients, unexplained: residual / Math.max(1e-12, energy(estimate)) };
}

function dot(a: Float32Array, b: Float32Array): number {
  const length = Math.min(a.length, b.length);
  let total = 0;
  for (let i = 0; i < length; i++) total += (a[i] ?? 0) * (b[i] ?? 0);
  return total;
}

/** Gaussian elimination with partial pivoting (the systems here are 4 × 4). */
function solve(matrix: readonly number[][], rhs: readonly number[]): number[] {
  const n = rhs.length;
  const a = matrix.map((row, i) => [...row, rhs[i] ?? 0]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(a[r]?.[col] ?? 0) > Math.abs(a[pivot]?.[col] ?? 0)) pivot = r;
    [a[col], a[pivot]] = [a[pivot] ?? [], a[col] ?? []];
    const p = a[col]?.[col] ?? 0;
    if (Math.abs(p) < 1e-12) continue;
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = (a[r]?.[col] ?? 0) / p;
      for (let c = col; c <= n; c++) (a[r] as number[])[c] = (a[r]?.[c] ?? 0) - f * (a[col]?.[c] ?? 0);
    }
  }
  return a.map((row, i) => (row[n] ?? 0) / ((row[i] ?? 0) || 1));
}
