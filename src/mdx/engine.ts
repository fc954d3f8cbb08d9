/**
 * UVR's MDX-Net `.onnx` models, run as python-audio-separator's MDXSeparator runs them
 * (architectures/mdx_separator.py `separate`, `demix`, `run_model`; uvr_lib_v5/stft.py):
 *
 * 1. peak = max |mix| over both channels; the mix is scaled by float32(0.9 / peak) when the peak
 *    is above 0.9 (spec_utils.normalize, in float32);
 * 2. demix: trim = n_fft/2, chunk = hop·(segment_size − 1), gen = chunk − 2·trim; the mix gets
 *    `trim` zeros in front and gen + trim − N mod gen behind (length M); chunks start every
 *    int((1 − overlap)·chunk) samples up to M, each cut at M and zero-padded to `chunk`;
 * 3. per chunk: STFT → the network (with denoise: −½·net(−spec) + ½·net(spec)) → iSTFT; the
 *    first `actual` samples weighted by np.hanning(actual) (symmetric, of the chunk's own length;
 *    none when overlap is 0), summed and divided by the summed weights, in float32;
 * 4. the track is read back from `trim` on; primary = that × peak (even when the mix was not
 *    scaled: audio-separator's quirk, kept), secondary = scaled mix − primary × compensate
 *    (compensate enters only the secondary, as audio-separator does); with `invertSpect`, UVR's
 *    spectral inversion of the scaled mix and primary × compensate (spec_utils.invert_stem,
 *    separation/spectral-inversion.ts). audio-separator inverts against `raw_mix`, the mix
 *    through the model's own STFT round trip (cut to dim_f bins, chunked at 2 % overlap); here
 *    the mix itself, as the difference takes it, so the secondary keeps what lies above dim_f.
 *
 * Streamed: positions before the next chunk's start are final, so they are written and dropped;
 * memory is one chunk, its spectrogram and an accumulator one chunk long. The peak comes from
 * the first pass's statistics. A mono source arrives duplicated to stereo, as audio-separator's
 * prepare_mix makes it, and its stems stay stereo.
 */
import { closeSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describeError, StemsplitError } from '../errors.js';
import { openModelFile } from '../model-files/regular.js';
import { Fft } from '../dsp/fft.js';
import { freeInputOutputAxes } from '../onnx/free-dims.js';
import { sha256File } from '../model-files/sha256.js';
import { checkOnce } from '../onnx/cache.js';
import { createOrtSession, runTensors, type OrtSessionHandle } from '../onnx/session.js';
import type { SeparationProgress, TrackModel } from '../separation/model.js';
import { TrackWindow, type StemWriter, type TrackStream } from '../separation/track-stream.js';
import { InvertedStemWriter } from '../separation/spectral-inversion.js';
import { readModelData, secondaryStem, stemFileName, type MdxModelData } from './model-data.js';
import { checkOptionKeys } from '../contract/option-table.js';
import { MDX_DEFAULTS, MDX_OPTION_TABLE, type MdxOptions } from './options.js';
import { MdxSpectrum } from './spectrum.js';
import { withTta } from '../separation/tta.js';

export const MDX_SAMPLE_RATE = 44_100;
/** audio-separator's default normalization_threshold. */
const NORMALIZATION_THRESHOLD = Math.fround(0.9);

/** A model's data with the run's options, checked. */
export interface MdxSettings extends MdxModelData, MdxOptions {}

/** The chunk layout demix uses for a track of `length` samples. */
export interface MdxGeometry {
  readonly trim: number;
  readonly chunk: number;
  readonly gen: number;
  /** The padded mixture's length: trim + length + pad. */
  readonly padded: number;
  readonly step: number;
  readonly chunks: number;
}

export function mdxGeometry(settings: Pick<MdxSettings, 'nFft' | 'segmentSize' | 'overlap' | 'hopLength'>, length: number): MdxGeometry {
  const trim = settings.nFft / 2;
  const chunk = settings.hopLength * (settings.segmentSize - 1);
  const gen = chunk - 2 * trim;
  const pad = gen + trim - (length % gen);
  const padded = trim + length + pad;
  const step = Math.trunc((1 - settings.overlap) * chunk);
  return { trim, chunk, gen, padded, step, chunks: Math.ceil(padded / step) };
}

/** The model data merged with the options, refused in one line where the official code would fail or loop. */
export function mdxSettings(data: MdxModelData, options: Partial<MdxOptions> = {}): MdxSettings {
  const merged = { ...MDX_DEFAULTS, ...options };
  const usage = (message: string): never => {
    throw new StemsplitError('USAGE', message);
  };
  if (!Fft.supports(data.nFft)) {
    throw new StemsplitError(
      'MODEL_INVALID',
      `${data.origin}: n_fft ${data.nFft} has a prime factor other than 2, 3 and 5, which stemsplit's FFT does not take`,
    );
  }
  checkOptionKeys(MDX_OPTION_TABLE, merged);
  const settings: MdxSettings = { ...data, ...merged };
  // A hop past n_fft leaves samples no frame covers: the inverse STFT would divide by a zero window
  // sum. Given by the user, the flag is at fault; at UVR's default, the model data is.
  if (merged.hopLength > data.nFft) {
    if (options.hopLength !== undefined) usage(`--mdx-hop-length ${merged.hopLength} is more than the model's n_fft ${data.nFft}: frames would leave gaps`);
    throw new StemsplitError(
      'MODEL_INVALID',
      `${data.origin}: n_fft ${data.nFft} is shorter than UVR's hop ${merged.hopLength}, so its frames would leave gaps`,
    );
  }
  const geometry = mdxGeometry(settings, 1);
  if (geometry.gen <= 0) {
    usage(
      `--mdx-segment-size ${merged.segmentSize} is too small for n_fft ${data.nFft}: chunks of ${merged.hopLength}·(segment − 1) samples must be longer than ${data.nFft}`,
    );
  }
  if (geometry.step < 1) usage(`--mdx-overlap ${merged.overlap} leaves no step between chunks`);
  return settings;
}

/** The network on one chunk's spectrogram, through ONNX Runtime (input `input`, the first output). */
export interface MdxOpenOptions {
  readonly intraOpThreads?: number;
  /** Where a graph's trial run, once passed, is remembered (onnx/cache.ts checkOnce); without it the trial runs at every open. */
  readonly cacheDir?: string;
}

export class MdxNetwork {
  private constructor(
    readonly settings: MdxSettings,
    readonly spectrum: MdxSpectrum,
    private readonly session: OrtSessionHandle,
    private readonly onnxPath: string,
  ) {}

  /**
   * Opens `onnxPath` with `settings`. audio-separator runs the file with ONNX Runtime when the
   * segment size is the model's dim_t, and converts it to PyTorch (onnx2torch) otherwise; the
   * same graph with its time axis declared free does here what the conversion does there.
   */
  static async open(onnxPath: string, settings: MdxSettings, options: MdxOpenOptions = {}): Promise<MdxNetwork> {
    const model = settings.segmentSize === settings.dimT ? onnxPath : withFreeTime(onnxPath);
    const session = await createOrtSession(model, {
      externalDataFolder: path.dirname(onnxPath),
      ...(options.intraOpThreads === undefined ? {} : { intraOpThreads: options.intraOpThreads }),
    });
    const broken = contractBreach(session, settings);
    if (broken !== undefined) {
      await session.release();
      throw new StemsplitError('MODEL_INVALID', `${onnxPath}: ${broken}`);
    }
    const network = new MdxNetwork(settings, new MdxSpectrum(settings.nFft, settings.hopLength, settings.dimF, settings.segmentSize), session, onnxPath);
    // Shapes that fit do not prove a graph runs (an op may ask for 10^10 elements): one pass on
    // silence refuses such a file as it loads, naming it, before any audio is decoded. It costs a
    // chunk (seconds at UVR's sizes), so a pass is remembered per file and settings where a cache is given.
    const trial = async () => {
      const estimate = await network.predict(new Float32Array(4 * settings.dimF * settings.segmentSize));
      // A separator's estimate of silence is finite; NaN or ∞ there would fill every stem with it.
      if (!estimate.every(Number.isFinite))
        throw new StemsplitError('MODEL_INVALID', `${onnxPath}: its graph gives NaN or infinite values for a silent chunk, so its stems would be noise`);
    };
    try {
      if (options.cacheDir === undefined) await trial();
      else await checkOnce(options.cacheDir, 'mdx', `${await sha256File(onnxPath)}:${JSON.stringify(settings)}:runs`, trial);
    } catch (error) {
      await network.release();
      throw error;
    }
    return network;
  }

  /** With `tta`: the plain, channel-swapped and polarity-inverted estimates, each undone, averaged (separation/tta.ts). */
  readonly #augmented = withTta((chunk) => this.estimate(chunk), 2);

  /** One chunk [2, chunk] (planar) → the network's estimate [2, chunk], before any window. */
  forward(chunk: Float32Array): Promise<Float32Array> {
    return this.settings.tta === true ? this.#augmented(chunk) : this.estimate(chunk);
  }

  private async estimate(chunk: Float32Array): Promise<Float32Array> {
    const spec = this.spectrum.analyze(chunk);
    let estimate: Float32Array;
    if (this.settings.denoise) {
      const negated = await this.predict(spec.map((v) => -v));
      const plain = await this.predict(spec);
      estimate = new Float32Array(spec.length);
      for (let i = 0; i < spec.length; i++) estimate[i] = (negated[i] as number) * -0.5 + (plain[i] as number) * 0.5;
    } else {
      estimate = await this.predict(spec);
    }
    return this.spectrum.synthesize(estimate);
  }

  private async predict(spec: Float32Array): Promise<Float32Array> {
    const { dimF, segmentSize } = this.settings;
    const output = this.session.outputNames[0] as string;
    const dims = [1, 4, dimF, segmentSize];
    let result: Record<string, { data: Float32Array }>;
    try {
      result = await runTensors(this.session, { input: { data: spec, dims } }, [output]);
    } catch (error) {
      // The input has the shape the file declares (checked as it opened): a graph that still fails is the file's fault, so name it.
      throw new StemsplitError('MODEL_INVALID', `${this.onnxPath}: its graph fails on a [${dims.join(', ')}] spectrogram (${describeError(error)})`, {
        cause: error,
      });
    }
    const tensor = result[output] as { data: Float32Array };
    if (tensor.data.length !== spec.length) {
      throw new StemsplitError(
        'MODEL_INVALID',
        `${this.onnxPath}: the MDX-Net model returned ${tensor.data.length} values for a [${dims.join(', ')}] spectrogram`,
      );
    }
    return tensor.data;
  }

  release(): Promise<void> {
    return this.session.release();
  }
}

/** ONNX's protobuf cannot exceed 2 GiB (bigger models keep their weights as external data). */
const MAX_ONNX_BYTES = 2 ** 31 - 1;

/** The bytes of an `.onnx` file: a regular file within protobuf's limit. */
function readOnnxFile(onnxPath: string): Buffer {
  const { fd, size } = openModelFile(onnxPath, 'MDX-Net model', (error) => new StemsplitError('MODEL_NOT_FOUND', `cannot read ${onnxPath}`, { cause: error }));
  try {
    if (size > MAX_ONNX_BYTES) throw new StemsplitError('MODEL_INVALID', `${onnxPath} is ${size} bytes, more than an .onnx file can be (2 GiB)`);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The graph with its batch and time axes free; a file that is not protobuf is refused naming it. */
function withFreeTime(onnxPath: string): Uint8Array {
  const bytes = readOnnxFile(onnxPath);
  try {
    return freeInputOutputAxes(bytes, [0, 3], 'mdx');
  } catch (error) {
    throw new StemsplitError('MODEL_INVALID', `${onnxPath} is not an ONNX model (${describeError(error)})`, { cause: error });
  }
}

/**
 * What breaks MDX-Net's contract, checked when the session opens (before any audio): an input
 * named "input" and a first output, both float32 [batch, 4, dim_f, dim_t] as the model data says;
 * free (symbolic) dimensions fit anything. Undefined when the model keeps it.
 */
function contractBreach(session: OrtSessionHandle, settings: MdxSettings): string | undefined {
  const { inputMetadata, outputMetadata } = session.session;
  const input = inputMetadata.find((value) => value.name === 'input');
  if (input === undefined) return `an MDX-Net model takes an input named "input"; this one takes ${session.inputNames.join(', ')}`;
  const output = outputMetadata[0];
  if (output === undefined) return 'the model has no output';
  const expected = [undefined, 4, settings.dimF, settings.segmentSize];
  for (const [what, value] of [
    ['input', input],
    [`output "${output.name}"`, output],
  ] as const) {
    if (!value.isTensor || value.type !== 'float32') return `its ${what} is not a float32 tensor`;
    const shape = value.shape;
    const fits =
      shape.length === 0 ||
      (shape.length === 4 && shape.every((dim, axis) => typeof dim !== 'number' || dim <= 0 || expected[axis] === undefined || dim === expected[axis]));
    if (!fits) {
      return `its ${what} is [${shape.join(', ')}], but MDX-Net with this model data (dim_f ${settings.dimF}, dim_t ${settings.dimT}) runs [batch, 4, ${settings.dimF}, ${settings.segmentSize}]; is the model data for this model?`;
    }
  }
  return undefined;
}

/** Receives consecutive blocks of the two stems (planar [2, count] each) from track position `start`. */
export type MdxWriter = (primary: Float32Array, secondary: Float32Array, start: number, count: number) => Promise<void> | void;

export interface MdxRunOptions {
  readonly onProgress?: (progress: SeparationProgress) => void;
  readonly signal?: AbortSignal;
}

/** audio-separator's separate + demix over a streamed stereo track whose peak the first pass measured. */
export async function demixMdx(network: MdxNetwork, input: TrackStream, write: MdxWriter, options: MdxRunOptions = {}): Promise<void> {
  const { settings } = network;
  const { length } = input;
  const peak = input.statistics?.peak;
  if (peak === undefined) throw new StemsplitError('SEPARATION_FAILED', "MDX-Net needs the track's peak from the first pass");
  const source = new TrackWindow(input, 2 * settings.hopLength * (settings.segmentSize - 1));
  try {
    await demixFrom(network, source, length, Math.fround(peak), write, options);
    await source.finish();
  } catch (error) {
    await source.close().catch(() => undefined);
    throw error;
  }
}

async function demixFrom(network: MdxNetwork, source: TrackWindow, length: number, peak: number, write: MdxWriter, options: MdxRunOptions): Promise<void> {
  const { settings } = network;
  const { trim, chunk, padded, step, chunks } = mdxGeometry(settings, length);
  // spec_utils.normalize with NumPy 2's float32 scalar arithmetic.
  const scale = peak > NORMALIZATION_THRESHOLD ? Math.fround(NORMALIZATION_THRESHOLD / peak) : 1;
  const mix = (channel: number, position: number): number =>
    scale === 1 ? source.sample(channel, position) : Math.fround(source.sample(channel, position) * scale);
  const compensate = Math.fround(settings.compensate);
  // With invertSpect the blocks pass through the inversion, which holds them back up to n_fft samples.
  let written = 0;
  const inverter =
    settings.invertSpect === true
      ? new InvertedStemWriter(async (stems, frames) => {
          await write(stems[0] as Float32Array, stems[1] as Float32Array, written, frames);
          written += frames;
        }, length)
      : undefined;
  const input = new Float32Array(2 * chunk);
  // Sums of weighted chunk outputs and of weights over mixture positions [base, base + chunk).
  const result = [new Float32Array(chunk), new Float32Array(chunk)] as const;
  const divider = new Float32Array(chunk);
  let base = 0;

  for (let k = 0; k < chunks; k++) {
    options.signal?.throwIfAborted();
    const start = k * step;
    const actual = Math.min(start + chunk, padded) - start;
    const window = settings.overlap === 0 ? undefined : hanning(actual);
    // Track position p is mixture position p + trim; the padding is zeros.
    const first = Math.max(0, start - trim);
    const end = Math.min(length, start + actual - trim);
    source.discardBefore(first);
    await source.ensure(end);
    input.fill(0);
    for (let c = 0; c < 2; c++) for (let p = first; p < end; p++) input[c * chunk + p + trim - start] = mix(c, p);
    const estimate = await network.forward(input);
    const at = start - base;
    for (let c = 0; c < 2; c++) {
      const sums = result[c] as Float32Array;
      for (let i = 0; i < actual; i++) {
        const value = estimate[c * chunk + i] as number;
        sums[at + i] = (sums[at + i] as number) + (window ? Math.fround(value * (window[i] as number)) : value);
      }
    }
    for (let i = 0; i < actual; i++) divider[at + i] = (divider[at + i] as number) + (window ? (window[i] as number) : 1);
    options.onProgress?.({ done: k + 1, total: chunks });
    const settled = k + 1 < chunks ? start + step : padded;
    await emit(settled);
  }

  /** Writes the final mixture positions [base, settled) that are track positions, and slides the sums on. */
  async function emit(settled: number): Promise<void> {
    const from = Math.max(base, trim);
    const to = Math.min(settled, trim + length);
    if (to > from) {
      const count = to - from;
      const primary = new Float32Array(2 * count);
      const secondary = new Float32Array(2 * count);
      // The inversion's inputs: the scaled mix and primary × compensate.
      const mixed = new Float32Array(inverter === undefined ? 0 : 2 * count);
      const compensated = new Float32Array(inverter === undefined ? 0 : 2 * count);
      for (let c = 0; c < 2; c++) {
        const sums = result[c] as Float32Array;
        for (let i = 0; i < count; i++) {
          const j = from - base + i;
          const value = Math.fround(Math.fround((sums[j] as number) / (divider[j] as number)) * peak);
          primary[c * count + i] = value;
          secondary[c * count + i] = Math.fround(Math.fround(-value * compensate) + mix(c, from - trim + i));
          if (inverter === undefined) continue;
          mixed[c * count + i] = mix(c, from - trim + i);
          compensated[c * count + i] = Math.fround(value * compensate);
        }
      }
      await (inverter === undefined ? write(primary, secondary, from - trim, count) : inverter.push([primary], mixed, count, compensated));
    }
    const shift = settled - base;
    for (const row of [...result, divider]) {
      row.copyWithin(0, shift);
      row.fill(0, row.length - shift);
    }
    base = settled;
  }
}

/** np.hanning(m): 0.5 + 0.5·cos(π·n/(m − 1)) for n = 1 − m, 3 − m, …, m − 1 (float64); [1] for m = 1. */
export function hanning(m: number): Float64Array {
  if (m === 1) return Float64Array.of(1);
  const out = new Float64Array(m);
  for (let i = 0; i < m; i++) out[i] = 0.5 + 0.5 * Math.cos((Math.PI * (1 - m + 2 * i)) / (m - 1));
  return out;
}

/** What `loadMdx` needs of a model reference. */
export interface MdxModelRef {
  readonly path: string;
  readonly name?: string;
  readonly options?: { readonly mdx?: Partial<MdxOptions> };
}

/** The stems a model of `primaryStem` writes: UVR's names lower-cased, primary first. */
export function mdxSources(primaryStem: string): [string, string] {
  return [stemFileName(primaryStem), stemFileName(secondaryStem(primaryStem))];
}

/** An MDX-Net `.onnx` file as a stemsplit model: model data from NAME.json or the built-in table, the reference's `--mdx-*` options. */
export async function loadMdx(ref: MdxModelRef, options: MdxOpenOptions = {}): Promise<TrackModel> {
  const settings = mdxSettings(readModelData(ref.path), ref.options?.mdx);
  const network = await MdxNetwork.open(ref.path, settings, options);
  const name = ref.name ?? path.basename(ref.path).replace(/\.onnx$/i, '');
  const sources = mdxSources(settings.primaryStem);
  return {
    name,
    sampleRate: MDX_SAMPLE_RATE,
    sources,
    normalize: false,
    stereoForMono: true,
    streamTrack: (input: TrackStream, write: StemWriter, run: MdxRunOptions) =>
      demixMdx(network, input, (primary, secondary, _start, count) => write([primary, secondary], count), run),
    dispose: () => network.release(),
  };
}
