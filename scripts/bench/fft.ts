/**
 * The TypeScript FFT (src/dsp/fft.ts) that every family's STFT and iSTFT run on: microseconds per
 * complex transform (a forward and an inverse, averaged) for the sizes the families use (Demucs
 * 4096; RoFormer, SCNet and MDX23C 2048 to 8192; UVR's MDX-Net 5120, 6144 and 7680).
 *
 *   node --import tsx scripts/bench/fft.ts [--sizes 2048,4096,5120,6144,7680,8192] [--seconds 1]
 */
import { parseArgs } from 'node:util';
import { Fft } from '../../src/dsp/fft.js';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: '2048,4096,5120,6144,7680,8192' },
    seconds: { type: 'string', default: '1' },
  },
});

console.log('| size | µs per transform |');
console.log('|---:|---:|');
for (const size of values.sizes.split(',').map(Number)) {
  const fft = new Fft(size);
  const signal = Float64Array.from({ length: size }, (_, i) => Math.sin(i * 0.37) + Math.cos(i * 1.3));
  const re = new Float64Array(size);
  const im = new Float64Array(size);
  const roundTrip = () => {
    re.set(signal);
    im.fill(0);
    fft.forward(re, im);
    fft.inverse(re, im);
  };
  for (let i = 0; i < 200; i++) roundTrip(); // warm-up: let the JIT optimise
  let rounds = 0;
  const started = performance.now();
  while (performance.now() - started < 1000 * Number(values.seconds)) {
    for (let i = 0; i < 50; i++) roundTrip();
    rounds += 50;
  }
  const microseconds = ((performance.now() - started) * 1000) / (2 * rounds);
  console.log(`| ${size} | ${microseconds.toFixed(1)} |`);
}
