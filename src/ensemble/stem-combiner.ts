/** What combines one output stem of an ensemble (combine.ts picks one per stem; spectral.ts is one kind). */
export interface StemCombiner {
  /** The members' next `frames` samples (planar [2, frames] each, in member order) → settled output, planar. */
  push(inputs: readonly Float32Array[], frames: number): Float32Array;
  /** After the track's last sample: whatever is left (checks every sample arrived). */
  finish(): Float32Array;
}
