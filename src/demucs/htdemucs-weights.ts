/**
 * HTDemucs' checkpoint parameters as its graph builder reads them: by name and the shape its config
 * implies (htdemucs-parameters.ts), through the shared state reader, as constants of the stage
 * being built.
 */
import type { OnnxGraph, Value } from '../onnx/graph.js';
import type { Ops } from '../onnx/ops.js';
import type { CheckpointTensor } from '../torch/checkpoint.js';
import { StateReader } from '../torch/state-reader.js';
import type { ParameterShapes } from './v3-parameters.js';

/** PyTorch's GroupNorm and LayerNorm epsilons, as HTDemucs builds them. */
export const GROUP_NORM_EPS = 1e-5;
export const LAYER_NORM_EPS = 1e-5;

/** The graph of the stage being built, and its ops. */
export interface StageInProgress {
  readonly graph: OnnxGraph;
  readonly ops: Ops;
}

/**
 * Checkpoint parameters by name, each of the shape the config implies, through the shared state
 * reader (which remembers which were used, so leftovers are reported), as graph constants where
 * the builder wants them.
 */
export class HTDemucsWeights {
  private readonly reader: StateReader;
  private readonly shapes: ReadonlyMap<string, readonly number[]>;
  /** Prefixes of parameters this structure deliberately leaves unused. */
  private readonly skipped: string[] = [];

  /** `expected`: every parameter the config constructs, by name. */
  constructor(
    state: ReadonlyMap<string, CheckpointTensor>,
    expected: ParameterShapes,
    private readonly currentGraph: () => OnnxGraph,
  ) {
    this.reader = new StateReader(state, 'checkpoint');
    this.shapes = new Map(expected);
  }

  has(name: string): boolean {
    return this.reader.has(name);
  }

  tensor(name: string): CheckpointTensor {
    const shape = this.shapes.get(name);
    // A builder reading what the parameter list lacks is a bug here, not a damaged file.
    if (shape === undefined) throw new Error(`the HTDemucs builder reads ${name}, which its parameter list lacks`);
    return this.reader.get(name, shape);
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

  /** Refuses leftovers, and a deliberately unused parameter of the wrong shape (PyTorch would refuse to load it). */
  assertAllUsed(): void {
    for (const [name, shape] of this.shapes) {
      if (this.skipped.some((prefix) => name.startsWith(prefix)) && this.reader.has(name)) this.reader.get(name, shape);
    }
    this.reader.refuseUnused('HTDemucs', (key) => this.skipped.some((prefix) => key.startsWith(prefix)));
  }
}
