/** How PyTorch's `nn.LSTM` lays out one direction of a layer's parameters. */

/** weight_ih [4H, in], weight_hh [4H, H], bias_ih and bias_hh [4H]: four gate blocks of H rows each, in `TORCH_LSTM_GATES` order. */
export interface TorchLstmDirection {
  readonly weightIh: Float32Array;
  readonly weightHh: Float32Array;
  readonly biasIh: Float32Array;
  readonly biasHh: Float32Array;
}

/** The order of the gate blocks in PyTorch's LSTM parameters: i, f, g (the cell candidate), o. */
export const TORCH_LSTM_GATES = ['input', 'forget', 'cell', 'output'] as const;

export type LstmGate = (typeof TORCH_LSTM_GATES)[number];
