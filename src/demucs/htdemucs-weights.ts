/**
 * HTDemucs' checkpoint parameters as its graph builder reads them: by name through the shared
 * state reader, as constants of the stage being built, with each bias checked against its weight.
 */
import { StemsplitError } from '../errors.js';
import type { OnnxGraph, Value } from '../onnx/graph.js';
import type { Ops } from '../onnx/ops.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { StateReader } from '../torch/state-reader.js';

/** PyTorch's GroupNorm and LayerNorm epsilons, as HTDemucs builds them. */
export const GROUP_NORM_EPS = 1e-5;
export const LAYER_NORM_EPS = 1e-5;

/** The graph of the stage being built, and its ops. */
export interface StageInProgress {
  readonly graph: OnnxGraph;
  readonly ops: Ops;
}

/**
 * Checkpoint parameters by name, through the shared state reader (which remembers which were used,
 * so leftovers are reported), as graph constants where the builder wants them.
 */
export class HTDemucsWeights {
  private readonly reader: StateReader;
  /** Prefixes of parameters this structure deliberately leaves unused. */
  private readonly skipped: string[] = [];

  constructor(
    private readonly state: ReadonlyMap<string, CheckpointTensor>,
    private readonly currentGraph: () => OnnxGraph,
  ) {
    this.reader = new StateReader(state, 'checkpoint');
  }

  has(name: string): boolean {
    return this.reader.has(name);
  }

  tensor(name: string): CheckpointTensor {
    const tensor = this.reader.get(name);
    this.checkBias(name, tensor);
    return tensor;
  }

  data(name: string): Float32Array {
    return this.tensor(name).data;
  }

  /** The parameter as a graph constant, optionally with another (same-size) shape. */
  value(name: string, shape?: readonly number[]): Value {
    const tensor = this.tensor(name);
    return this.currentGraph().constant(tensor.data, shape ?? tensor.shape, name);
  }

  constant(data: Float32Array, shape: readonly number[], hint: string): Value {
    return this.currentGraph().constant(data, shape, hint);
  }

  /** Marks every parameter under `prefix` as deliberately unused. */
  skip(prefix: string): void {
    this.skipped.push(prefix);
  }

  assertAllUsed(): void {
    this.reader.refuseUnused('HTDemucs', (key) => this.skipped.some((prefix) => key.startsWith(prefix)));
  }

  /**
   * A bias must have one value per output of its weight (a convolution's first dimension, a
   * transposed one's second, a norm's own length): the graph would otherwise broadcast a wrong
   * one silently, so a damaged checkpoint is refused here, naming the tensor.
   */
  private checkBias(name: string, bias: CheckpointTensor): void {
    const weightName = name.replace(/bias$/, 'weight');
    if (weightName === name || !this.state.has(weightName)) return;
    const weight = this.state.get(weightName) as CheckpointTensor;
    const outputs = weight.shape.length === 1 ? weight.shape[0] : /\.conv_tr\.bias$/.test(name) ? weight.shape[1] : weight.shape[0];
    if (bias.shape.length !== 1 || bias.shape[0] !== outputs) {
      throw new StemsplitError('MODEL_INVALID', `checkpoint parameter ${name} is [${bias.shape.join(', ')}], but ${weightName} [${weight.shape.join(', ')}] needs a bias of [${String(outputs)}]: the checkpoint is damaged or not HTDemucs`);
    }
  }
}
