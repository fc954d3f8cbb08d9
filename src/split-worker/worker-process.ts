/** The worker-process side of `workerSplitter`: loads models once, runs split jobs, reports progress. */
import { describeError, isStemsplitError } from '../errors.js';
import { modelLoader } from '../models/loaders.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, type EnsembleMethod } from '../ensemble/algorithms.js';
import { isEnsembleRef, ModelCache, type ModelChoice, type ModelRef } from '../models/registry.js';
import type { SeparationModel } from '../separation/model.js';
import { loadNamed, type EnsemblePlace } from './load-refusal.js';
import { splitChain, type LoadedStep } from './chain.js';
import type { Ensemble } from '../ensemble/separate.js';
import { splitAudioFile, type SplitProgress } from './split-audio-file.js';
import { WORKER_DATA_ENV, type SplitWorkerData, type WorkerReply, type WorkerRequest } from './worker-pool.js';

const send = process.send?.bind(process);
if (!send) throw new Error('worker-process.ts runs as the split worker of workerSplitter (it needs an IPC channel)');
const models = new ModelCache(modelLoader(JSON.parse(process.env[WORKER_DATA_ENV] ?? '{}') as SplitWorkerData));
const reply = (message: WorkerReply) => void send(message);
// The channel closes when the process that started this one is gone, even killed outright: no one
// is left to report to, and a job it restarts must not meet this one's output.
process.on('disconnect', () => process.kill(process.pid, 'SIGKILL'));

const running = new Map<number, AbortController>();

/** Loads a model, a refusal naming it, its file and its place in an ensemble. */
function load(ref: ModelRef, place?: EnsemblePlace): Promise<SeparationModel> {
  return loadNamed(ref, (model) => models.load(model), place);
}

/** Loads an ensemble's members one at a time, so two conversions never run side by side. */
async function loadEach(refs: readonly ModelRef[]): Promise<SeparationModel[]> {
  const loaded: SeparationModel[] = [];
  for (const [index, ref] of refs.entries()) loaded.push(await load(ref, { index: index + 1, count: refs.length }));
  return loaded;
}

/** A model, or an ensemble whose members stay loaded together (as a single model stays loaded between jobs). */
async function loadChoice(choice: ModelChoice, method: EnsembleMethod | undefined): Promise<SeparationModel | Ensemble> {
  if (!isEnsembleRef(choice)) return load(choice);
  return { name: choice.name, members: await loadEach(choice.members), method: method ?? { algorithm: DEFAULT_ENSEMBLE_ALGORITHM } };
}

process.on('message', async (request: WorkerRequest) => {
  if ('cancel' in request) {
    running.get(request.id)?.abort();
    return;
  }
  const { id, job } = request;
  const { inputPath, model: choice, ensemble, outDir, then, keepIntermediate, ...output } = job;
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const model = await loadChoice(choice, ensemble);
    // A chain's steps load before it starts, so a step that cannot load fails the job before any work.
    const later: LoadedStep[] = [];
    for (const step of then ?? []) later.push({ input: step.input, model: await loadChoice(step.model, step.ensemble) });
    // Until now a cancel ends this process (a load hears no message); from here it stops the split at its next chunk.
    reply({ id, type: 'loaded' });
    const options = { ...output, onProgress: (progress: SplitProgress) => reply({ id, type: 'progress', progress }), signal: controller.signal };
    const result =
      later.length > 0
        ? await splitChain(inputPath, [{ model }, ...later], outDir, { ...options, ...(keepIntermediate ? { keepIntermediate } : {}) })
        : await splitAudioFile(inputPath, model, outDir, options);
    reply({ id, type: 'done', result });
  } catch (error) {
    reply({ id, type: 'error', code: isStemsplitError(error) ? error.code : undefined, message: describeError(error) });
  } finally {
    running.delete(id);
  }
});
