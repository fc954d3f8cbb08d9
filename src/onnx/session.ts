/**
 * The only module that touches onnxruntime-node. It is imported lazily, on the first
 * session, so commands that never separate (or the HTTP layer) do not load it.
 */
import type { InferenceSession } from 'onnxruntime-node';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { StemsplitError } from '../errors.js';
import { gpuGraph } from './gpu-graph.js';

export interface OrtSessionOptions {
  /** Threads for one operator; default: ONNX Runtime's choice (all cores). A worker pool sets this. */
  readonly intraOpThreads?: number;
  /** Keep ORT's CPU arena (faster repeated runs, memory is kept between runs). Default true. */
  readonly cpuMemArena?: boolean;
  /** Plan memory from the first run's shapes (fixed-shape graphs profit). Default true. */
  readonly memPattern?: boolean;
  /**
   * Let idle intra-op threads spin for the next parallel section (ORT's default, true). Where a
   * model runs as several sessions in turn, one session's spinning threads take the cores the
   * next session's threads need.
   */
  readonly allowSpinning?: boolean;
  /** ORT log level: 0 verbose … 4 fatal. Default 4 (fatal only: errors are thrown, and told by the caller). */
  readonly logSeverity?: 0 | 1 | 2 | 3 | 4;
  /**
   * The folder a graph given as bytes keeps its external data in (its file's folder): without it
   * ONNX Runtime looks for a model's external data in the working directory.
   */
  readonly externalDataFolder?: string;
  /** The provider to open on, whatever ORT_PROVIDER_ENV says (`stemsplit devices --check` compares the two). */
  readonly provider?: 'cpu' | GpuProviderName;
  /** Writes the graph as ORT optimised it to this path (a diagnosis aid: scripts/bench/ort-liveness.ts). */
  readonly optimizedModelPath?: string;
}

/** A float32 tensor in plain data: `data.length` is the product of `dims`. */
export interface Float32Tensor {
  readonly data: Float32Array;
  readonly dims: readonly number[];
}

export interface OrtSessionHandle {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  readonly session: InferenceSession;
  /** Opened on a GPU provider: a failure as it runs is the GPU's (GPU_UNAVAILABLE), and the pool may go on on the CPU. */
  readonly onGpu: boolean;
  release(): Promise<void>;
}

type OrtModule = typeof import('onnxruntime-node');

/**
 * Set to a path prefix, every session writes ONNX Runtime's per-node profile (JSON) there when it
 * is released; `scripts/bench/ort-profile.ts` sums them per operator. A diagnosis aid: it slows runs.
 */
export const ORT_PROFILE_ENV = 'STEMSPLIT_ORT_PROFILE';

/**
 * Set to an ONNX Runtime log level (0 verbose … 4 fatal), every session of the process logs at it
 * unless its options say otherwise. At 0 ONNX Runtime writes to stderr which provider took each
 * node ("Node placements"); scripts/gpu/placement.ts reads that. A diagnosis aid: it is noisy.
 */
export const ORT_LOG_SEVERITY_ENV = 'STEMSPLIT_ORT_LOG_SEVERITY';

/**
 * Set to a folder, every session writes its graph as ONNX Runtime optimised it there (NNNN.onnx,
 * in the order opened), so scripts/gpu/placement.ts can name the operators of a session that ORT
 * reports only as "All nodes placed on [provider]". A diagnosis aid.
 */
export const ORT_OPTIMIZED_DIR_ENV = 'STEMSPLIT_ORT_OPTIMIZED_DIR';
let optimizedWritten = 0;

function optimizedModelPath(options: OrtSessionOptions): string | undefined {
  const dir = process.env[ORT_OPTIMIZED_DIR_ENV];
  if (options.optimizedModelPath !== undefined || !dir) return options.optimizedModelPath;
  return join(dir, `${process.pid}-${String(++optimizedWritten).padStart(4, '0')}.onnx`);
}

function envLogSeverity(env: NodeJS.ProcessEnv = process.env): OrtSessionOptions['logSeverity'] {
  const raw = env[ORT_LOG_SEVERITY_ENV];
  if (raw === undefined || raw === '') return undefined;
  if (!/^[0-4]$/.test(raw)) throw new StemsplitError('USAGE', `${ORT_LOG_SEVERITY_ENV} must be 0 (verbose) to 4 (fatal), got "${raw}"`);
  return Number(raw) as OrtSessionOptions['logSeverity'];
}

/**
 * Set to a GPU provider's name (devices/adapters.ts GpuProvider: webgpu, dml, coreml), every
 * session of this process opens on it, with the CPU taking the operators it lacks. The worker
 * pool sets it for its GPU workers: a process runs on one device.
 */
export const ORT_PROVIDER_ENV = 'STEMSPLIT_ORT_PROVIDER';

/**
 * Fault injection for tests of what follows a GPU failure (no real GPU can be made to fail on
 * demand): set to `lost`, every run of a session on a GPU fails as a lost device does.
 */
export const GPU_FAULT_ENV = 'STEMSPLIT_TEST_GPU_FAULT';

const GPU_PROVIDERS = ['webgpu', 'dml', 'coreml'] as const;
export type GpuProviderName = (typeof GPU_PROVIDERS)[number];

/** The GPU provider this process's sessions use, or undefined for the CPU. */
export function sessionGpuProvider(env: NodeJS.ProcessEnv = process.env): GpuProviderName | undefined {
  const name = env[ORT_PROVIDER_ENV];
  if (name === undefined || name === '' || name === 'cpu') return undefined;
  if (!(GPU_PROVIDERS as readonly string[]).includes(name))
    throw new StemsplitError('USAGE', `${ORT_PROVIDER_ENV} must be cpu or one of ${GPU_PROVIDERS.join(', ')}, got "${name}"`);
  return name as GpuProviderName;
}

/** What ONNX Runtime is given for `provider`: the GPU's provider first, the CPU for what it lacks. */
function executionProviders(provider: GpuProviderName | undefined): InferenceSession.SessionOptions['executionProviders'] {
  return provider === undefined ? ['cpu'] : [provider, 'cpu'];
}

let ortModule: Promise<OrtModule> | undefined;

/**
 * ONNX Runtime's Linux build uploads usage telemetry to mobile.events.data.microsoft.com unless
 * ORT_DISABLE_TELEMETRY is set before it starts; stemsplit runs offline and calls no one. Call it
 * on the main thread before starting workers: a worker's process.env is a copy native code never sees.
 */
export function disableOrtTelemetry(): void {
  process.env['ORT_DISABLE_TELEMETRY'] ??= '1';
}

function loadOrt(): Promise<OrtModule> {
  disableOrtTelemetry();
  // Caching the module promise is not state about sessions: the native module loads once per process anyway.
  ortModule ??= import('onnxruntime-node');
  return ortModule;
}

export async function createOrtSession(model: string | Uint8Array, options: OrtSessionOptions = {}): Promise<OrtSessionHandle> {
  const ort = await loadOrt();
  const profilePrefix = process.env[ORT_PROFILE_ENV];
  const gpu = options.provider === undefined ? sessionGpuProvider() : options.provider === 'cpu' ? undefined : options.provider;
  const graph = gpu === undefined ? model : reshapedForGpu(model);
  // A graph read from its file and reshaped is given as bytes: its external data lies beside the file.
  const externalDataFolder = options.externalDataFolder ?? (typeof model === 'string' && typeof graph !== 'string' ? dirname(model) : undefined);
  const extraSession = {
    ...(options.allowSpinning === false ? { intra_op: { allow_spinning: '0' } } : {}),
    ...(externalDataFolder === undefined ? {} : { model_external_initializers_file_folder_path: externalDataFolder }),
  };
  const optimized = optimizedModelPath(options);
  const sessionOptions: InferenceSession.SessionOptions = {
    executionProviders: executionProviders(gpu),
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    enableCpuMemArena: options.cpuMemArena ?? true,
    // DirectML requires it off; WebGPU turns it off itself.
    enableMemPattern: gpu === undefined ? (options.memPattern ?? true) : false,
    // Fatal only: ORT logs each error it also throws as a native line on stderr (colour codes and all);
    // the thrown error reaches the caller and is told in one line naming the model.
    logSeverityLevel: options.logSeverity ?? envLogSeverity() ?? 4,
    ...(Object.keys(extraSession).length > 0 ? { extra: { session: extraSession } } : {}),
    ...(options.intraOpThreads === undefined ? {} : { intraOpNumThreads: options.intraOpThreads, interOpNumThreads: 1 }),
    ...(profilePrefix ? { enableProfiling: true, profileFilePrefix: profilePrefix } : {}),
    ...(optimized === undefined ? {} : { optimizedModelFilePath: optimized }),
  };
  const open = (options: InferenceSession.SessionOptions) =>
    typeof graph === 'string' ? ort.InferenceSession.create(graph, options) : ort.InferenceSession.create(graph, options);
  let session: InferenceSession;
  try {
    session = await open(sessionOptions);
  } catch (error) {
    const what = typeof model === 'string' ? model : `${model.byteLength}-byte graph`;
    // On a GPU, the model is to blame only if the CPU refuses it too; else the GPU is (no adapter, no memory).
    if (gpu !== undefined && (await opensOnCpu(open, sessionOptions))) {
      throw new StemsplitError('GPU_UNAVAILABLE', `the GPU (ONNX Runtime's ${gpu} provider) cannot run ${what}: ${firstLine(error)}`, { cause: error });
    }
    throw new StemsplitError('MODEL_INVALID', `ONNX Runtime cannot load ${what}: ${firstLine(error)}`, { cause: error });
  }
  // Releasing twice (a model disposed by its owner and again on the way out) is a no-op, not ORT's "already disposed".
  let released: Promise<void> | undefined;
  return {
    inputNames: session.inputNames,
    outputNames: session.outputNames,
    session,
    onGpu: gpu !== undefined,
    release: () => {
      if (released === undefined) {
        if (profilePrefix) session.endProfiling();
        released = session.release();
      }
      return released;
    },
  };
}

/**
 * The graph with what the GPU provider mishandles reshaped (gpu-graph.ts: MultiHeadAttention
 * written out, wide Splits made trees, Convs the provider gets wrong padded); the model as given (path or bytes) when nothing is.
 */
function reshapedForGpu(model: string | Uint8Array): string | Uint8Array {
  let reshaped;
  try {
    reshaped = gpuGraph(typeof model === 'string' ? readFileSync(model) : model);
  } catch {
    return model; // unreadable or not a graph: ONNX Runtime says so as it opens it
  }
  return reshaped.attention + reshaped.splits + reshaped.convolutions === 0 ? model : reshaped.model;
}

/** Runs the session on float32 inputs and returns the requested float32 outputs (all when `outputs` is omitted). */
export async function runTensors(
  handle: OrtSessionHandle,
  inputs: Readonly<Record<string, Float32Tensor>>,
  outputs: readonly string[] = handle.outputNames,
): Promise<Record<string, Float32Tensor>> {
  const ort = await loadOrt();
  const feeds: Record<string, InstanceType<OrtModule['Tensor']>> = {};
  for (const [name, tensor] of Object.entries(inputs)) feeds[name] = new ort.Tensor('float32', tensor.data, [...tensor.dims]);
  let results: InferenceSession.ReturnType;
  try {
    if (handle.onGpu && process.env[GPU_FAULT_ENV] === 'lost') throw new Error(`the device was lost (injected by ${GPU_FAULT_ENV})`);
    results = await handle.session.run(feeds, [...outputs]);
  } catch (error) {
    if (handle.onGpu) throw new StemsplitError('GPU_UNAVAILABLE', `the GPU failed as it ran: ${firstLine(error)}`, { cause: error });
    throw new StemsplitError('SEPARATION_FAILED', `ONNX Runtime failed: ${firstLine(error)}`, { cause: error });
  }
  const plain: Record<string, Float32Tensor> = {};
  for (const name of outputs) {
    const result = results[name];
    if (result === undefined || result.type !== 'float32') {
      throw new StemsplitError('SEPARATION_FAILED', `graph output ${name} is missing or not float32`);
    }
    plain[name] = { data: result.data as Float32Array, dims: result.dims };
  }
  return plain;
}

async function opensOnCpu(
  open: (options: InferenceSession.SessionOptions) => Promise<InferenceSession>,
  options: InferenceSession.SessionOptions,
): Promise<boolean> {
  try {
    await (await open({ ...options, executionProviders: ['cpu'] })).release();
    return true;
  } catch {
    return false;
  }
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] ?? message;
}
