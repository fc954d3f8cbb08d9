/**
 * The node events of an ONNX Runtime profile (the JSON a session writes when profiling is on,
 * `STEMSPLIT_ORT_PROFILE` in src/onnx/session.ts): one entry per node run, in execution order.
 * Shared by `ort-profile.ts` (where the time goes) and `ort-liveness.ts` (what the activations peak at).
 */
import { readFileSync } from 'node:fs';

export interface KernelEvent {
  /** The node's name in the graph ORT ran (its optimised graph). */
  readonly node: string;
  readonly operator: string;
  /** Kernel time of this run of the node. */
  readonly microseconds: number;
  /** Logical shapes (before NCHWc blocking) of the inputs and outputs ORT logged. */
  readonly inputShapes: readonly (readonly number[])[];
  readonly outputShapes: readonly (readonly number[])[];
  /** Bytes the node's outputs took. */
  readonly outputBytes: number;
}

interface RawEvent {
  readonly cat?: string;
  readonly name?: string;
  readonly dur?: number;
  readonly args?: {
    readonly op_name?: string;
    readonly output_size?: string;
    readonly input_type_shape?: readonly Record<string, number[]>[];
    readonly output_type_shape?: readonly Record<string, number[]>[];
  };
}

const KERNEL_SUFFIX = '_kernel_time';

export function readKernelEvents(file: string): KernelEvent[] {
  const events = JSON.parse(readFileSync(file, 'utf8')) as RawEvent[];
  const shapes = (list: readonly Record<string, number[]>[] | undefined) => (list ?? []).map((shape) => Object.values(shape)[0] ?? []);
  return events
    .filter((event) => event.cat === 'Node' && event.name?.endsWith(KERNEL_SUFFIX) && event.dur !== undefined)
    .map((event) => ({
      node: (event.name as string).slice(0, -KERNEL_SUFFIX.length),
      operator: event.args?.op_name ?? '?',
      microseconds: event.dur as number,
      inputShapes: shapes(event.args?.input_type_shape),
      outputShapes: shapes(event.args?.output_type_shape),
      outputBytes: Number(event.args?.output_size ?? 0),
    }));
}
