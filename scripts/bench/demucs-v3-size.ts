/**
 * Demucs v3/v2 at their released size: the structure of `hdemucs_mmi` (HDemucs, channels 48) or of
 * `mdx`'s time-domain member (Demucs, channels 64), from the shared fixture's kwargs widened back
 * to the released ones, with random weights, through one window of N seconds: the graph's build
 * and first run, a second run, the process's peak RSS. No released weights are needed.
 *
 *   node --import tsx scripts/bench/demucs-v3-size.ts hdemucs 20 [threads]
 *   node --import tsx scripts/bench/demucs-v3-size.ts demucs 5
 */
import path from 'node:path';
import { readCheckpoint } from '../../src/torch/checkpoint.js';
import { openV3 } from '../../src/demucs/segment-model-v3.js';
import { parseV3Config } from '../../src/demucs/v3-config.js';
import { v3Parameters } from '../../src/demucs/v3-parameters.js';

const [kind = 'hdemucs', secondsArg = '5', threadsArg = '2'] = process.argv.slice(2);
if (kind !== 'hdemucs' && kind !== 'demucs') throw new Error('usage: demucs-v3-size.ts hdemucs|demucs SECONDS [THREADS]');
const fixtures = path.resolve(process.env['STEMSPLIT_SHARED_DIR'] ?? '../shared', 'fixtures', 'demucs-v3');
const checkpoint = readCheckpoint(path.join(fixtures, kind === 'hdemucs' ? 'hdemucs_mmi_m0.th' : 'mdx_m0.th'));
// The fixtures narrow channels and dconv_comp; everything else is the released models' kwargs.
const kwargs = new Map(checkpoint.kwargs);
kwargs.set('channels', kind === 'hdemucs' ? 48 : 64);
kwargs.set('dconv_comp', 4);
const config = parseV3Config(kind === 'hdemucs' ? 'HDemucs' : 'Demucs', kwargs);

let seed = 1;
const random = (): number => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648 - 0.5) * 0.05;
const state = new Map(v3Parameters(config).map(([name, shape]) => [name, { shape, data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, random) }]));
const parameters = [...state.values()].reduce((sum, tensor) => sum + tensor.data.length, 0);

const model = openV3(config, state, `${kind} (random, released size)`, kind, { intraOpThreads: Number(threadsArg) });
const window = model.windowSamples?.(Math.trunc(44100 * Number(secondsArg))) ?? 0;
const input = Float32Array.from({ length: 2 * window }, () => random() * 10);
let started = performance.now();
await model.run(input);
const first = (performance.now() - started) / 1000;
started = performance.now();
await model.run(input);
const second = (performance.now() - started) / 1000;
await model.dispose();
console.log(
  `${kind}: ${(parameters / 1e6).toFixed(1)} M parameters, window ${window} samples (${secondsArg} s), ${threadsArg} threads: ` +
    `build + first run ${first.toFixed(1)} s, second run ${second.toFixed(1)} s, peak RSS ${(process.resourceUsage().maxRSS / 1024).toFixed(0)} MiB`,
);
