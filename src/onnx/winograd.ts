/**
 * A 3×3 convolution (stride 1, padding 1, no bias) as Winograd's F(m×m, 3×3): each (m+2)×(m+2)
 * input tile and 3×3 kernel go to a transform domain where the convolution is (m+2)² independent
 * channel products, then back to an m×m output tile. F(4×4) costs 36/16 = 2.25 multiplications
 * per output instead of 9, F(6×6) 64/36 = 1.78, so where the channel products dominate (many
 * channels) the convolution takes about half the time; on wide planes with few channels the
 * transforms' memory traffic eats the gain. Interpolation points 0, ±1, ±2 (and ±1/2 for F(6×6))
 * and ∞ (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks", 2015); in float32
 * F(4×4) matches the direct convolution to about 110 dB, F(6×6) to about 100 dB.
 *
 *   input transform   V = Bᵀ d B    two strided grouped convolutions (along the rows, then the columns)
 *   channel products  M = U · V     one batched MatMul, U = G g Gᵀ from the weights on each run
 *   output transform  Y = Aᵀ M A    one MatMul, then DepthToSpace puts the m×m tiles in place
 */
import type { Value } from './graph.js';
import type { Ops } from './ops.js';

type Matrix = readonly (readonly number[])[];

/** One F(m×m, 3×3): m outputs per tile side from m + 2 inputs. */
export interface WinogradVariant {
  readonly out: number;
  /** Bᵀ [m+2, m+2] */
  readonly input: Matrix;
  /** G [m+2, 3] */
  readonly kernel: Matrix;
  /** Aᵀ [m, m+2] */
  readonly output: Matrix;
}

export const WINOGRAD_F4: WinogradVariant = {
  out: 4,
  input: [
    [4, 0, -5, 0, 1, 0],
    [0, -4, -4, 1, 1, 0],
    [0, 4, -4, -1, 1, 0],
    [0, -2, -1, 2, 1, 0],
    [0, 2, -1, -2, 1, 0],
    [0, 4, 0, -5, 0, 1],
  ],
  kernel: [
    [1 / 4, 0, 0],
    [-1 / 6, -1 / 6, -1 / 6],
    [-1 / 6, 1 / 6, -1 / 6],
    [1 / 24, 1 / 12, 1 / 6],
    [1 / 24, -1 / 12, 1 / 6],
    [0, 0, 1],
  ],
  output: [
    [1, 1, 1, 1, 1, 0],
    [0, 1, -1, 2, -2, 0],
    [0, 1, 1, 4, 4, 0],
    [0, 1, -1, 8, -8, 1],
  ],
};

export const WINOGRAD_F6: WinogradVariant = {
  out: 6,
  input: [
    [1, 0, -21 / 4, 0, 21 / 4, 0, -1, 0],
    [0, 1, 1, -17 / 4, -17 / 4, 1, 1, 0],
    [0, -1, 1, 17 / 4, -17 / 4, -1, 1, 0],
    [0, 1 / 2, 1 / 4, -5 / 2, -5 / 4, 2, 1, 0],
    [0, -1 / 2, 1 / 4, 5 / 2, -5 / 4, -2, 1, 0],
    [0, 2, 4, -5 / 2, -5, 1 / 2, 1, 0],
    [0, -2, 4, 5 / 2, -5, -1 / 2, 1, 0],
    [0, -1, 0, 21 / 4, 0, -21 / 4, 0, 1],
  ],
  kernel: [
    [1, 0, 0],
    [-2 / 9, -2 / 9, -2 / 9],
    [-2 / 9, 2 / 9, -2 / 9],
    [1 / 90, 1 / 45, 2 / 45],
    [1 / 90, -1 / 45, 2 / 45],
    [32 / 45, 16 / 45, 8 / 45],
    [32 / 45, -16 / 45, 8 / 45],
    [0, 0, 1],
  ],
  output: [
    [1, 1, 1, 1, 1, 1, 1, 0],
    [0, 1, -1, 2, -2, 1 / 2, -1 / 2, 0],
    [0, 1, 1, 4, 4, 1 / 4, 1 / 4, 0],
    [0, 1, -1, 8, -8, 1 / 8, -1 / 8, 0],
    [0, 1, 1, 16, 16, 1 / 16, 1 / 16, 0],
    [0, 1, -1, 32, -32, 1 / 32, -1 / 32, 1],
  ],
};

/** A band's transform-domain tensor stays under this size (bytes); larger planes run in bands of tile rows. */
export const WINOGRAD_BAND_BYTES = 16 * 1024 * 1024;

/**
 * conv(x, weight) with a 3×3 kernel, stride 1 and padding 1 for x [1, C, H, W] and a constant
 * weight [K, C, 3, 3] (row-major data); any H and W (the last tiles are zero-padded and cropped).
 * The plane runs in bands of tile rows, each with the two input rows it shares with its
 * neighbours, so the transform-domain tensors (up to 2.25× the input) are never held for all of it.
 */
export function winogradConv3x3(ops: Ops, x: Value, weight: Float32Array, outChannels: number, name: string, variant: WinogradVariant = WINOGRAD_F4): Value {
  const [batch, channels, height, width] = x.shape as [number, number, number, number];
  if (batch !== 1) throw new Error(`winogradConv3x3 takes one sample, not ${batch}`);
  if (weight.length !== outChannels * channels * 9) throw new Error(`${name}: weight has ${weight.length} values, expected ${outChannels}×${channels}×3×3`);
  const { out, input, output } = variant;
  const tile = out + 2;
  const tileRows = Math.ceil(height / out);
  const tileColumns = Math.ceil(width / out);
  const transformBytesPerRow = tile * tile * Math.max(channels, outChannels) * tileColumns * 4;
  const bandRows = Math.max(1, Math.min(tileRows, Math.floor(WINOGRAD_BAND_BYTES / transformBytesPerRow)));
  // The fixed transforms depend only on the channel count: every convolution of a graph shares them.
  const kernels: BandKernels = {
    rows: ops.cachedConstant(repeat(input.flat(), channels), [channels * tile, 1, tile, 1], 'winograd_bt_rows'),
    columns: ops.cachedConstant(repeat(input.flat(), channels * tile), [channels * tile * tile, 1, 1, tile], 'winograd_bt_columns'),
    u: transformedKernels(ops, x, weight, outChannels, channels, name, variant.kernel),
    back: ops.cachedConstant(outerProduct(output), [out * out, tile * tile], 'winograd_at'),
  };
  const bands: Value[] = [];
  for (let first = 0; first < tileRows; first += bandRows) {
    const last = Math.min(tileRows, first + bandRows);
    // Output rows [m·first, m·last) read input rows [m·first − 1, m·last + 1); rows outside the plane are the zero padding.
    const top = out * first - 1;
    const bottom = out * last + 1;
    const rows = bandRows >= tileRows ? x : ops.slice(x, 2, Math.max(0, top), Math.min(height, bottom));
    const padding = { top: top < 0 ? 1 : 0, bottom: Math.max(0, bottom - height), right: 1 + tileColumns * out - width };
    bands.push(winogradBand(ops, rows, kernels, padding, { rows: last - first, columns: tileColumns, out }, outChannels));
  }
  let y = bands.length === 1 ? (bands[0] as Value) : ops.concat(bands, 2);
  if (tileRows * out !== height) y = ops.slice(y, 2, 0, height);
  if (tileColumns * out !== width) y = ops.slice(y, 3, 0, width);
  return y;
}

interface BandKernels {
  /** Bᵀ along the rows, then along the columns, per input channel (grouped convolutions). */
  readonly rows: Value;
  readonly columns: Value;
  /** The transformed kernels [(m+2)², K, C]. */
  readonly u: Value;
  /** Aᵀ ⊗ Aᵀ [m², (m+2)²]. */
  readonly back: Value;
}

/** One band of tile rows: [1, C, rows, W] (with its halo) → [1, K, m·tiles.rows, m·tiles.columns]. */
function winogradBand(
  ops: Ops,
  x: Value,
  kernels: BandKernels,
  padding: { readonly top: number; readonly bottom: number; readonly right: number },
  tileGrid: { readonly rows: number; readonly columns: number; readonly out: number },
  outChannels: number,
): Value {
  const channels = x.shape[1] as number;
  const { out, rows: tileRows, columns: tileColumns } = tileGrid;
  const tile = out + 2;
  const tiles = tileRows * tileColumns;
  const rowsDone = ops.conv(x, kernels.rows, undefined, { strides: [out, 1], pads: [padding.top, 1, padding.bottom, padding.right], group: channels });
  const transformed = ops.conv(rowsDone, kernels.columns, undefined, { strides: [1, out], group: channels * tile });
  // [C, (m+2)², tiles] → [(m+2)², C, tiles]: one channel product per transform-domain position.
  const v = ops.transpose(ops.reshape(transformed, [channels, tile * tile, tiles]), [1, 0, 2]);
  const products = ops.matmul(kernels.u, v, { fixed: true });
  // Aᵀ M A for every (k, tile) at once; the rows come out ordered (i, j, k), as DepthToSpace (DCR) reads them.
  const outputTiles = ops.matmul(kernels.back, ops.reshape(products, [tile * tile, outChannels * tiles]), { fixed: true });
  return ops.depthToSpace(ops.reshape(outputTiles, [1, out * out * outChannels, tileRows, tileColumns]), out);
}

/**
 * U = G g Gᵀ for every (k, c), as [(m+2)², K, C], computed in the graph on each run from the 3×3
 * weights laid out as 9 planes [i·3 + j, K·C]: one MatMul with G ⊗ G [(m+2)², 9]. Stored instead,
 * U would hold 4× the weights for as long as the session lives. The planes wait for the
 * convolution's input (`Ops.after`), so ONNX Runtime neither folds U into a constant nor makes it
 * early: it is made just before its convolution and freed after it.
 */
function transformedKernels(ops: Ops, x: Value, weight: Float32Array, outChannels: number, channels: number, name: string, transform: Matrix): Value {
  const { graph } = ops;
  const count = outChannels * channels;
  const planes = new Float32Array(9 * count);
  for (let kc = 0; kc < count; kc++) for (let tap = 0; tap < 9; tap++) planes[tap * count + kc] = weight[kc * 9 + tap] as number;
  const weights = ops.after(graph.constant(planes, [9, count], `${name}.winograd_taps`), x);
  const tile = transform.length;
  const u = ops.matmul(ops.cachedConstant(outerProduct(transform), [tile * tile, 9], 'winograd_g'), weights, { fixed: true });
  return ops.reshape(u, [tile * tile, outChannels, channels]);
}

/** (A ⊗ A)[i·n + j, a·m + b] = A[i][a]·A[j][b] for A [n, m]. */
function outerProduct(matrix: Matrix): Float32Array {
  const rows = matrix.length;
  const columns = (matrix[0] as readonly number[]).length;
  const out = new Float32Array(rows * rows * columns * columns);
  for (let i = 0; i < rows; i++) {
    for (let j = 0; j < rows; j++) {
      for (let a = 0; a < columns; a++) {
        for (let b = 0; b < columns; b++) out[(i * rows + j) * columns * columns + a * columns + b] = (matrix[i]?.[a] as number) * (matrix[j]?.[b] as number);
      }
    }
  }
  return out;
}

function repeat(values: readonly number[], times: number): Float32Array {
  const out = new Float32Array(values.length * times);
  for (let t = 0; t < times; t++) out.set(values, t * values.length);
  return out;
}
