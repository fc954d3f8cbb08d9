/**
 * VR engine speed and memory on UVR's real network sizes with random weights: the state dict of
 * one of UVR's layouts written as torch.save writes it (test/support/vr-state-dict.ts; its file size
 * is checked against UVR's size class), then the whole engine (bands, network windows, stems)
 * through the streamed pipeline on synthetic music.
 *
 *   node --import tsx scripts/bench/vr.ts [--layout 123821] [--params 4band_v2] [--seconds 30] [--threads 2]
 *        [--window 512] [--in-process]   (run here, not in a worker process as serve/split do)
 *
 * Layouts: 31191, 33966, 129605 (base width 16), 123821 (32), 537238 (64), as
 * nets.determine_model_capacity builds them; v51-32, v51-48, v51-64 (nets_new.CascadedNet's nout,
 * nout_lstm 128; 218409 is v51-64). Prints the file's size class, the load time, seconds per
 * minute of audio, seconds per network window and the peak RSS while separating.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { v50Tensors, v51Tensors, writeVrPth, type VrTensor } from '../../test/support/vr-state-dict.js';
import { separateStream } from '../../src/separation/index.js';
import { loadVr, nnArchSize } from '../../src/vr/engine.js';
import { vrParams } from '../../src/vr/params.js';
import { rssSampler } from './rss.js';
import { benchTrack, interleavedBlocks, rerunAsSplitWorker } from './synthetic.js';

const { values } = parseArgs({
  options: {
    layout: { type: 'string', default: '123821' },
    params: { type: 'string', default: '4band_v2' },
    seconds: { type: 'string', default: '30' },
    threads: { type: 'string', default: '2' },
    window: { type: 'string', default: '512' },
    'in-process': { type: 'boolean', default: false },
  },
});

rerunAsSplitWorker(import.meta.url, values['in-process']);

/** UVR's layouts: the tensors and the model data the official code builds them from. */
function layoutTensors(layout: string, bins: number): { tensors: VrTensor[]; modelData: Record<string, unknown> } {
  const v50 = (ch: number, fiveLevels: boolean, branches: number) => ({ tensors: v50Tensors(ch, fiveLevels, branches), modelData: {} });
  const v51 = (nout: number) => ({ tensors: v51Tensors(bins, nout, 128), modelData: { nout, nout_lstm: 128 } });
  const layouts: Record<string, () => { tensors: VrTensor[]; modelData: Record<string, unknown> }> = {
    '31191': () => v50(16, false, 5),
    '33966': () => v50(16, false, 7),
    '129605': () => v50(16, true, 6),
    '123821': () => v50(32, false, 5),
    '537238': () => v50(64, false, 7),
    'v51-32': () => v51(32),
    'v51-48': () => v51(48),
    'v51-64': () => v51(64),
  };
  const make = layouts[layout];
  if (make === undefined) throw new Error(`--layout must be one of ${Object.keys(layouts).join(', ')}`);
  return make();
}

const dir = mkdtempSync(path.join(tmpdir(), 'stemsplit-vr-bench-'));
try {
  const params = vrParams(values.params, '--params');
  const { tensors, modelData } = layoutTensors(values.layout, params.bins);
  const pth = path.join(dir, 'bench.pth');
  let started = performance.now();
  writeVrPth(pth, tensors, { output: true });
  writeFileSync(path.join(dir, 'bench.json'), JSON.stringify({ vr_model_param: params.name, primary_stem: 'Instrumental', ...modelData }));
  const bytes = statSync(pth).size;
  const parameters = tensors.reduce((sum, [, shape]) => sum + shape.reduce((a, b) => a * b, 1), 0);
  console.log(
    `network: layout ${values.layout}, ${(parameters / 1e6).toFixed(1)} M parameters, ${Math.ceil(bytes / 1024)} KiB (UVR's size class: ${nnArchSize(bytes)}), written in ${((performance.now() - started) / 1000).toFixed(1)} s`,
  );
  started = performance.now();
  const model = await loadVr({ path: pth, options: { vr: { windowSize: Number(values.window) } } }, { intraOpThreads: Number(values.threads) });
  console.log(`load: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const seconds = Number(values.seconds);
  const track = benchTrack(seconds, 44_100, 2);
  const frames = track.length / 2;
  const rss = rssSampler();
  rss.reset();
  started = performance.now();
  let windows = 0;
  await separateStream(model, { length: frames, frames: interleavedBlocks(track, 2) }, () => undefined, { onProgress: ({ total }) => void (windows = total) });
  const elapsed = (performance.now() - started) / 1000;
  const peakRss = await rss.stop();
  await model.dispose();
  console.log(
    `separate: ${seconds} s of audio in ${elapsed.toFixed(1)} s (${windows} windows of ${values.window} frames, ${(elapsed / windows).toFixed(2)} s a window, threads ${values.threads}, params ${params.name})`,
  );
  console.log(`speed: ${((elapsed / seconds) * 60).toFixed(1)} s per minute of audio`);
  console.log(`peak RSS while separating: ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
