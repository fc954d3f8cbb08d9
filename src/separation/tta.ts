/**
 * Test-time augmentation as MSST's inference.py `--use_tta` does it (apply_tta): the network also
 * runs on the mix with its channels swapped and on the mix with its polarity inverted, each output
 * is undone (channels swapped back, sign flipped back) and the three are averaged. Done here per
 * chunk, on what the network is given: MSST's overlap-add is linear in the chunk outputs, so
 * averaging each chunk's three outputs is averaging the three whole-track demixes.
 */

/** A network on one planar chunk [channels, L] → [outputs, channels, L]. */
export type PlanarRunner = (chunk: Float32Array) => Promise<Float32Array>;

/** `run` with test-time augmentation: the mean of the plain, channel-swapped and polarity-inverted passes, each undone. */
export function withTta(run: PlanarRunner, channels: number): PlanarRunner {
  return async (chunk) => {
    const length = chunk.length / channels;
    const plain = await run(chunk);
    const swapped = swapChannels(await run(swapChannels(chunk, channels, length)), channels, length);
    const inverted = await run(chunk.map((value) => -value));
    const mean = new Float32Array(plain.length);
    for (let i = 0; i < mean.length; i++) mean[i] = ((plain[i] as number) + (swapped[i] as number) - (inverted[i] as number)) / 3;
    return mean;
  };
}

/** Planar blocks of `channels` planes of `length` samples, each block's planes in reverse order (MSST's `mix[::-1]`). */
function swapChannels(planes: Float32Array, channels: number, length: number): Float32Array {
  const block = channels * length;
  const swapped = new Float32Array(planes.length);
  for (let start = 0; start < planes.length; start += block) {
    for (let c = 0; c < channels; c++) swapped.set(planes.subarray(start + c * length, start + (c + 1) * length), start + (channels - 1 - c) * length);
  }
  return swapped;
}
