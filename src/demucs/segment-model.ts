/**
 * A converted HTDemucs as a segment model: the spectrogram and the normalizations of
 * HTDemucs.forward here, the network's stages through ONNX Runtime in between.
 */
import path from 'node:path';
import { StemsplitError } from '../errors.js';
import type { SegmentModel } from '../separation/model.js';
import { createOrtSession, runTensors, type Float32Tensor, type OrtSessionHandle } from '../onnx/session.js';
import type { ConvertedModel, ConvertedStage } from './convert.js';
import { GRAPH_INPUTS, GRAPH_OUTPUTS } from './htdemucs-graph.js';
import { SegmentStft, meanStd, type Normalization } from './stft.js';

/** Where a segment's time goes: `stft` (spectrogram and normalization), each graph stage, `istft` (inverse and sum). */
export type TimingSink = (part: string, milliseconds: number) => void;

/** HTDemucs.forward: x = (x − mean) / (1e-5 + std), for both branches. */
const NORMALIZATION_EPS = 1e-5;

interface StageSession {
  readonly stage: ConvertedStage;
  readonly session: OrtSessionHandle;
  /** Tensors no later stage reads: dropped once this stage has run. */
  readonly lastUse: readonly string[];
}

export interface OpenOptions {
  readonly intraOpThreads?: number;
  readonly onTiming?: TimingSink;
}

/** One ONNX Runtime session per stage, run in order around the spectrogram code. */
export async function openHTDemucs(converted: ConvertedModel, name: string, options: OpenOptions): Promise<SegmentModel> {
  const { intraOpThreads } = options;
  const sessions: StageSession[] = [];
  try {
    for (const [index, stage] of converted.stages.entries()) {
      const session = await createOrtSession(path.join(converted.directory, stage.file), {
        ...(intraOpThreads === undefined ? {} : { intraOpThreads }),
        // Each stage is its own session; an arena per session would keep every stage's
        // peak allocated at once, so allocations go straight to the system allocator.
        cpuMemArena: false,
        // The stages run one after another: a finished stage's spinning threads would take the
        // cores from the next one's (no spinning: 33.9 → 32.5 s per minute, docs/demucs.md).
        allowSpinning: false,
      });
      const later = converted.stages.slice(index + 1).flatMap((s) => s.inputs.map((input) => input.name));
      const lastUse = stage.inputs.map((input) => input.name).filter((input) => !later.includes(input));
      sessions.push({ stage, session, lastUse });
    }
  } catch (error) {
    await Promise.all(sessions.map(({ session }) => session.release()));
    throw error;
  }
  return new HTDemucsModel(name, converted, sessions, options.onTiming ?? ignoreTiming);
}

const ignoreTiming: TimingSink = () => undefined;

/** (x − mean) / (eps + std) into a new array; returns it with the statistics to undo it. */
function normalized(values: Float32Array): { data: Float32Array; stats: Normalization } {
  const stats = meanStd(values);
  const scale = 1 / (NORMALIZATION_EPS + stats.std);
  const data = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) data[i] = ((values[i] as number) - stats.mean) * scale;
  return { data, stats };
}

class HTDemucsModel implements SegmentModel {
  readonly sampleRate: number;
  readonly sources: readonly string[];
  readonly segmentSamples: number;
  readonly normalize = true;
  private readonly stft: SegmentStft;

  constructor(
    readonly name: string,
    private readonly converted: ConvertedModel,
    private readonly sessions: readonly StageSession[],
    private readonly onTiming: TimingSink,
  ) {
    this.sampleRate = converted.sampleRate;
    this.sources = converted.sources;
    this.segmentSamples = converted.segmentSamples;
    this.stft = new SegmentStft(converted.nfft, converted.segmentSamples);
  }

  async run(segment: Float32Array): Promise<Float32Array> {
    const { segmentSamples: length, stft } = this;
    const channels = this.converted.audioChannels;
    if (segment.length !== channels * length) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name} takes ${channels * length} samples per segment, got ${segment.length}`);
    }
    let started = performance.now();
    const spec = new Float32Array(2 * channels * stft.freqs * stft.frames);
    const specStats = stft.analyze(segment, spec, NORMALIZATION_EPS);
    const { data: wave, stats: waveStats } = normalized(segment);
    this.onTiming('stft', performance.now() - started);

    const outputs = await this.runStages(
      new Map([
        [GRAPH_INPUTS.spec, { data: spec, dims: [1, 2 * channels, stft.freqs, stft.frames] }],
        [GRAPH_INPUTS.wave, { data: wave, dims: [1, channels, length] }],
      ]),
    );
    const specOut = outputs.get(GRAPH_OUTPUTS.spec);
    const waveOut = outputs.get(GRAPH_OUTPUTS.wave);
    const sources = this.sources.length;
    // Both outputs come in phase layout: [1, phases, planes, rows(, frames)].
    const [, specPhases, specPlanes, specRows] = specOut?.dims ?? [];
    const [, wavePhases, wavePlanes, waveRows] = waveOut?.dims ?? [];
    if (
      specOut === undefined ||
      waveOut === undefined ||
      specPhases === undefined ||
      specPlanes !== sources * 2 * channels ||
      specRows === undefined ||
      wavePhases === undefined ||
      wavePlanes !== sources * channels ||
      waveRows === undefined ||
      wavePhases * waveRows < length
    ) {
      throw new StemsplitError('SEPARATION_FAILED', `${this.name}: the graph's outputs have unexpected shapes`);
    }

    // Per source: the time branch plus the inverse STFT of the spectrogram branch, both de-normalized.
    started = performance.now();
    const out = new Float32Array(sources * channels * length);
    for (let s = 0; s < sources; s++) {
      const source = {
        spec: { data: specOut.data, phases: specPhases, planes: specPlanes, rows: specRows, firstPlane: s * 2 * channels },
        specStats,
        wave: { data: waveOut.data, phases: wavePhases, planes: wavePlanes, rows: waveRows, firstPlane: s * channels },
        waveStats,
      };
      stft.synthesize(source, out, s * channels * length);
    }
    this.onTiming('istft', performance.now() - started);
    return out;
  }

  /** Runs the stages in order; each reads its inputs by name from what earlier ones wrote. */
  private async runStages(tensors: Map<string, Float32Tensor>): Promise<Map<string, Float32Tensor>> {
    for (const { stage, session, lastUse } of this.sessions) {
      const feeds: Record<string, Float32Tensor> = {};
      for (const input of stage.inputs) {
        const tensor = tensors.get(input.name);
        if (tensor === undefined) throw new StemsplitError('SEPARATION_FAILED', `${this.name}: stage ${stage.name} lacks input ${input.name}`);
        feeds[input.name] = tensor;
      }
      const started = performance.now();
      const results = await runTensors(session, feeds);
      this.onTiming(`graph:${stage.name}`, performance.now() - started);
      for (const name of lastUse) tensors.delete(name);
      for (const [outputName, tensor] of Object.entries(results)) tensors.set(outputName, tensor);
    }
    return tensors;
  }

  async dispose(): Promise<void> {
    await Promise.all(this.sessions.map(({ session }) => session.release()));
  }
}
