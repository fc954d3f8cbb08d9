/**
 * SCNet engine speed and memory on a full-size network with random weights: SCNet-large's published
 * hyper-parameters (MSST configs/config_musdb18_scnet_large.yaml), built here (no download), converted
 * to ONNX and run through MSST's demix on `--seconds` of synthetic music; beside it, with `--msst`,
 * MSST's own PyTorch inference of the same weights on the same input (scripts/bench/msst_reference.py,
 * which imports MSST from the given checkout), and how far apart their stems are.
 *
 *   node --import tsx scripts/bench/scnet.ts [--seconds 60] [--threads 2]
 *        [--msst /path/to/Music-Source-Separation-Training] [--python /usr/bin/python3] [--reference-env user|worker]
 *        [--set field=value]            (e.g. chunkSize=88200, numDualPathLayers=2: smaller runs; checked as a yaml is, so
 *                                        numDualPathLayers must be even, as SCNet needs)
 *        [--precision fp32|int8]        (int8: LSTMs and matrix products in int8, as --precision int8)
 *        [--in-process]                (run here, not in a worker process as serve/split do)
 *
 * Prints the load time, seconds per chunk and per minute of audio, where the time goes (STFT, graph,
 * iSTFT), the peak RSS while separating and of the whole process; with --msst the same for PyTorch
 * (whole-process peak RSS, ru_maxrss) and the SNR of each stem of one against the other.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { describeError } from '../../src/errors.js';
import { parseScnetConfig, type ScnetConfig } from '../../src/msst/scnet/config.js';
import { parsePrecision } from '../../src/onnx/quantize.js';
import { ScnetNetwork } from '../../src/msst/scnet/engine.js';
import { rssSampler } from './rss.js';
import { randomScnetState, SCNET_LARGE } from './scnet-random.js';
import { answerBuilt, buildInChild, chunkTimings, mb, measureDemix, msstSideBySide, printDemixRun, rerunAsSplitWorker, writeWeightBlob } from './synthetic.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    threads: { type: 'string', default: '2' },
    msst: { type: 'string' },
    python: { type: 'string', default: '/usr/bin/python3' },
    'reference-env': { type: 'string', default: 'user' },
    'build-only': { type: 'string' },
    set: { type: 'string', multiple: true },
    'in-process': { type: 'boolean', default: false },
    precision: { type: 'string', default: 'fp32' },
  },
});

/** Settings `--set` may change (smaller runs), and where each sits in the MSST config. */
const SETTABLE: Readonly<Record<string, readonly ['audio' | 'model' | 'inference', string]>> = {
  chunkSize: ['audio', 'chunk_size'],
  numOverlap: ['inference', 'num_overlap'],
  batchSize: ['inference', 'batch_size'],
  numDualPathLayers: ['model', 'num_dplayer'],
};

/**
 * The MSST config the run uses, `--set` applied: both sides build from it, and it goes through
 * the parser a user's yaml meets, so a value SCNet cannot take (an odd num_dplayer leaves the
 * separation net's output in its rfft domain) is refused in one line as it would be there.
 */
function benchDocument(): typeof SCNET_LARGE {
  const document = structuredClone(SCNET_LARGE);
  for (const pair of values.set ?? []) {
    const [key = '', value] = pair.split('=');
    const place = SETTABLE[key];
    if (!place) throw new Error(`--set takes ${Object.keys(SETTABLE).join(', ')}; got ${key}`);
    (document[place[0]] as Record<string, unknown>)[place[1]] = Number(value);
  }
  return document;
}

function benchConfig(): ScnetConfig {
  return parseScnetConfig(benchDocument(), 'SCNet-large (scripts/bench/scnet.ts --set)');
}

// A setting SCNet cannot take stops the run here, in one line, before any child process starts.
try {
  benchConfig();
} catch (error) {
  console.error(`scnet.ts: ${describeError(error)}`);
  process.exit(2);
}
rerunAsSplitWorker(import.meta.url, Boolean(values['build-only']) || values['in-process']);

if (values['build-only']) {
  // The child process that writes the random network's graph (and its weights for PyTorch), so the measured process holds no weights of its own.
  const directory = values['build-only'];
  const config = benchConfig();
  const state = randomScnetState(config);
  const stages = ScnetNetwork.writeStages(config, state, directory, parsePrecision(values.precision));
  writeWeightBlob(state, directory, 'weights.bin');
  writeFileSync(path.join(directory, 'config.yaml'), stringify(benchDocument()));
  answerBuilt(state, stages, 2);
}

const { timings, onTiming } = chunkTimings();
const threads = Number(values.threads);
const work = mkdtempSync(path.join(tmpdir(), 'stemsplit-bench-scnet-'));
try {
  const config = benchConfig();
  const sampler = rssSampler();
  const loadStarted = performance.now();
  const built = buildInChild(path.resolve(import.meta.dirname, 'scnet.ts'), [
    '--build-only',
    work,
    '--precision',
    values.precision,
    ...(values.set ?? []).flatMap((pair) => ['--set', pair]),
  ]);
  const network = await ScnetNetwork.fromStages(config, work, built.stages, { intraOpThreads: threads, onTiming });
  const loadSeconds = (performance.now() - loadStarted) / 1000;
  const loadPeak = sampler.peakBytes();
  console.log(
    `model           SCNet-large: dims ${config.dims.join('-')}, ${config.numDualPathLayers} dual-path layers, ${built.millions} M parameters (random), ${values.precision}`,
  );
  const seconds = Number(values.seconds);
  const run = await measureDemix(network, seconds, sampler);
  const { track, out, wallMs, peak } = run;
  const processPeak = process.resourceUsage().maxRSS * 1024;
  printDemixRun(run, {
    ...config,
    seconds,
    threads,
    load: `${loadSeconds.toFixed(1)} s (build and convert in a child process included), peak RSS ${mb(loadPeak)} MiB`,
    parts: ['STFT', 'graph (ORT)', 'iSTFT'],
    timings,
  });

  if (values.msst) {
    // The published model section is checked unless the run changed it.
    const unchanged = config.numDualPathLayers === SCNET_LARGE.model.num_dplayer;
    msstSideBySide(
      {
        python: values.python,
        msst: values.msst,
        modelType: 'scnet',
        config: path.join(work, 'config.yaml'),
        work,
        channels: config.channels,
        threads,
        referenceEnv: values['reference-env'],
        ...(unchanged ? { published: path.join(values.msst, 'configs/config_musdb18_scnet_large.yaml') } : {}),
      },
      { track, out, seconds, perMinute: (wallMs / 1000) * (60 / seconds), peak: processPeak },
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
