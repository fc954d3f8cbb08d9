/** The worker-thread side of `workerSplitter`: loads models once, runs split jobs, reports progress. */
import { parentPort, workerData } from 'node:worker_threads';
import { describeError, isStemsplitError, StemsplitError } from '../errors.js';
import { onnxLoaders } from '../models/loaders.js';
import { ModelCache } from '../models/registry.js';
import { splitAudioFile } from './split-audio-file.js';
import type { SplitWorkerData, WorkerReply, WorkerRequest } from './worker-pool.js';

const port = parentPort;
if (!port) throw new Error('worker-thread.ts must run in a worker thread');
const models = new ModelCache(onnxLoaders(workerData as SplitWorkerData));
const reply = (message: WorkerReply) => port.postMessage(message);

const running = new Map<number, AbortController>();

port.on('message', async (request: WorkerRequest) => {
  if ('cancel' in request) {
    running.get(request.id)?.abort();
    return;
  }
  const { id, job } = request;
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const model = await models.load(job.model).catch((error: unknown) => {
      throw new StemsplitError('SEPARATION_FAILED', `model ${job.model.name} could not be loaded: ${describeError(error)}`);
    });
    const result = await splitAudioFile(job.inputPath, model, job.outDir, {
      format: job.format,
      ...(job.mp3BitrateKbps ? { mp3BitrateKbps: job.mp3BitrateKbps } : {}),
      ...(job.float32 ? { float32: true } : {}),
      ...(job.int24 ? { int24: true } : {}),
      ...(job.sampleRate !== undefined ? { sampleRate: job.sampleRate } : {}),
      ...(job.shifts ? { shifts: job.shifts } : {}),
      ...(job.twoStems !== undefined ? { twoStems: job.twoStems } : {}),
      onProgress: (progress) => reply({ id, type: 'progress', progress }),
      signal: controller.signal,
    });
    reply({ id, type: 'done', result });
  } catch (error) {
    reply({ id, type: 'error', code: isStemsplitError(error) ? error.code : undefined, message: describeError(error) });
  } finally {
    running.delete(id);
  }
});
