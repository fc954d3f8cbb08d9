/**
 * A state dict read by a graph builder: each tensor by name, its shape checked against what the
 * config implies, and what was read remembered, so a checkpoint with layers the config does not
 * describe is refused rather than half-used.
 */
import { StemsplitError } from '../errors.js';
import type { CheckpointTensor } from './checkpoint.js';

export class StateReader {
  private readonly used = new Set<string>();

  /** `file` names the checkpoint in errors. */
  constructor(
    private readonly state: ReadonlyMap<string, CheckpointTensor>,
    private readonly file: string,
  ) {}

  has(name: string): boolean {
    return this.state.has(name);
  }

  /** The tensor `name`, of `shape` when one is given. */
  get(name: string, shape?: readonly number[]): CheckpointTensor {
    const tensor = this.state.get(name);
    if (tensor === undefined) throw new StemsplitError('MODEL_INVALID', `${this.file}: the checkpoint lacks ${name} (does the config match it?)`);
    if (shape !== undefined && (tensor.shape.length !== shape.length || tensor.shape.some((d, i) => d !== shape[i]))) {
      throw new StemsplitError('MODEL_INVALID', `${this.file}: ${name} is [${tensor.shape.join(', ')}], the config implies [${shape.join(', ')}]`);
    }
    this.used.add(name);
    return tensor;
  }

  /**
   * Refuses the checkpoint if the network left tensors unread, naming the first few; `ignored`
   * says which keys are bookkeeping the network recomputes or never needs.
   */
  refuseUnused(family: string, ignored: (key: string) => boolean = () => false): void {
    const unused = [...this.state.keys()].filter((key) => !this.used.has(key) && !ignored(key));
    if (unused.length === 0) return;
    const shown = unused.slice(0, 5).join(', ') + (unused.length > 5 ? ` and ${unused.length - 5} more` : '');
    throw new StemsplitError('MODEL_INVALID', `${this.file}: layers the ${family} config does not describe: ${shown}`);
  }
}
