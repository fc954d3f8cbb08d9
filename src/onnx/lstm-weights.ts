/**
 * A PyTorch LSTM's parameters (torch/lstm.ts) in the layout ONNX's LSTM operator takes (Ops.lstm):
 * gate blocks reordered, both directions stacked, the two biases side by side.
 */
import { TORCH_LSTM_GATES, type LstmGate, type TorchLstmDirection } from '../torch/lstm.js';

/** An LSTM's weights in ONNX's layout: W [dirs, 4H, in], R [dirs, 4H, H], B [dirs, 8H] (Wb then Rb), gates i, o, f, c. */
export interface OnnxLstmWeights {
  readonly directions: 1 | 2;
  readonly hidden: number;
  readonly input: number;
  readonly w: Float32Array;
  readonly r: Float32Array;
  readonly b: Float32Array;
}

/** The order of the gate blocks in ONNX's LSTM weights: i, o, f, c. */
const ONNX_LSTM_GATES: readonly LstmGate[] = ['input', 'output', 'forget', 'cell'];

/** A PyTorch LSTM layer (forward direction first, then `_reverse`) in ONNX's layout. */
export function onnxLstmWeights(layer: readonly TorchLstmDirection[], hidden: number): OnnxLstmWeights {
  const directions = layer.length;
  if (directions !== 1 && directions !== 2) throw new Error(`an LSTM has 1 or 2 directions, got ${directions}`);
  const input = (layer[0] as TorchLstmDirection).weightIh.length / (4 * hidden);
  const w = new Float32Array(directions * 4 * hidden * input);
  const r = new Float32Array(directions * 4 * hidden * hidden);
  const b = new Float32Array(directions * 8 * hidden);
  layer.forEach((direction, d) => {
    ONNX_LSTM_GATES.forEach((name, k) => {
      const gate = TORCH_LSTM_GATES.indexOf(name);
      const rows = (from: Float32Array, width: number) => from.subarray(gate * hidden * width, (gate + 1) * hidden * width);
      w.set(rows(direction.weightIh, input), (d * 4 + k) * hidden * input);
      r.set(rows(direction.weightHh, hidden), (d * 4 + k) * hidden * hidden);
      b.set(rows(direction.biasIh, 1), d * 8 * hidden + k * hidden);
      b.set(rows(direction.biasHh, 1), d * 8 * hidden + (4 + k) * hidden);
    });
  });
  return { directions, hidden, input, w, r, b };
}
