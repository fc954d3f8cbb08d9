/**
 * Any MSST family's network as a stemsplit model: MSST's chunked `demix` over the streamed track,
 * with `inference.normalize` when the config asks, the network's channels fed from the stereo
 * window, and `no_<target>` for a single-target model. A family gives a `ChunkNetwork` (one
 * chunk in, its stems out); this module does the rest, the same for every family.
 */
import { StemsplitError } from '../errors.js';
import type { SeparationProgress, TrackModel } from '../separation/model.js';
import { TrackWindow, type StemWriter, type TrackStream } from '../separation/track-stream.js';
import { InvertedStemWriter, needsTwoStems } from '../separation/spectral-inversion.js';
import { withTta } from '../separation/tta.js';
import type { MsstCommon } from './config.js';
import { demix, demixStream, type DemixOptions, type DemixSettings, type DemixSource, type DemixWriter } from './demix.js';

/** A network that separates one chunk: planar [channels, chunkSize] → [instruments, channels, chunkSize]. */
export interface ChunkNetwork {
  readonly settings: MsstCommon;
  forward(chunk: Float32Array): Promise<Float32Array>;
  release(): Promise<void>;
}

/** What a run may change of the config's `inference` section, and MSST's `--use_tta`. */
export interface DemixKnobs {
  readonly batchSize?: number;
  readonly numOverlap?: number;
  readonly tta?: boolean;
  /** A single-target model's `no_<target>` by spectral inversion (separation/spectral-inversion.ts), not mix − target. */
  readonly invertSpect?: boolean;
}

/** A demix run: progress, cancellation, and the batch size when not the config's. */
export type DemixRunOptions = DemixOptions & { readonly batchSize?: number };

/** The config's chunking, with the run's overrides. */
function demixSettings(settings: MsstCommon, knobs: DemixKnobs): DemixSettings {
  return { chunkSize: settings.chunkSize, numOverlap: knobs.numOverlap ?? settings.numOverlap, batchSize: knobs.batchSize ?? settings.batchSize };
}

/** MSST's demix of a whole track [channels, length] → [instruments, channels, length], no normalisation. */
export function demixTrack(network: ChunkNetwork, track: Float32Array, options: DemixRunOptions = {}): Promise<Float32Array> {
  const { settings } = network;
  return demix(
    (chunk) => network.forward(chunk),
    track,
    settings.channels,
    settings.instruments.length,
    demixSettings(settings, options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
    options,
  );
}

/** The stems a model made of `settings` writes: its instruments, or the target and `no_<target>`. */
export function msstSources(settings: MsstCommon): string[] {
  return settings.target === null ? [...settings.instruments] : [settings.target, `no_${settings.target}`];
}

/**
 * The network as the pipeline's model; it owns whole-track inference (`streamTrack`). A multi-stem
 * model given `invertSpect` has no secondary stem of its own: it runs only for `--two-stems X`,
 * whose no_X is then the spectral inversion of the mix and X (separation/spectral-inversion.ts).
 */
export function msstModel(network: ChunkNetwork, name: string, knobs: DemixKnobs = {}): TrackModel {
  const { settings } = network;
  const model: TrackModel = {
    name,
    sampleRate: settings.sampleRate,
    sources: msstSources(settings),
    normalize: settings.normalize,
    streamTrack: (input, write, run) => streamStereo(network, input, write, knobs, run),
    dispose: () => network.release(),
  };
  return knobs.invertSpect === true && settings.target === null ? needsTwoStems(model) : model;
}

/**
 * MSST's demix over a streamed stereo track: `inference.normalize` by the mono mix's mean and
 * population std (from the first pass), the model's channels fed from the window (a mono model
 * gets the mix of both), stems written as each block settles, duplicated to stereo for a mono
 * model; a single-target model also writes `no_<target>`, the mixture minus the target. With
 * `tta`, each chunk also runs channel-swapped and polarity-inverted (separation/tta.ts); with
 * `invertSpect`, `no_<target>` is the spectral inversion (separation/spectral-inversion.ts).
 */
async function streamStereo(
  network: ChunkNetwork,
  input: TrackStream,
  write: StemWriter,
  knobs: DemixKnobs,
  options: { readonly onProgress?: (progress: SeparationProgress) => void; readonly signal?: AbortSignal },
): Promise<void> {
  const { settings } = network;
  const { length } = input;
  const channels = settings.channels;
  const numStems = settings.instruments.length;
  const stats = input.statistics;
  if (settings.normalize && stats === undefined) throw new StemsplitError('SEPARATION_FAILED', "MSST normalisation needs the whole track's statistics");
  const mean = settings.normalize && stats ? stats.mean : 0;
  const spread = settings.normalize && stats ? Math.sqrt(stats.squares / stats.frames) : 1;
  const std = spread > 0 ? spread : 1;
  const window = new TrackWindow(input, 2 * settings.chunkSize);
  const value =
    channels === 2
      ? (channel: number, position: number) => (window.sample(channel, position) - mean) / std
      : (_channel: number, position: number) => ((window.sample(0, position) + window.sample(1, position)) / 2 - mean) / std;
  const source: DemixSource = { length, ensure: (end) => window.ensure(end), discardBefore: (position) => window.discardBefore(position), value };
  const inverter = knobs.invertSpect === true && settings.target !== null ? new InvertedStemWriter(write, length) : undefined;
  const toStems: DemixWriter = async (planes, start, count) => {
    const stems: Float32Array[] = [];
    for (let s = 0; s < numStems; s++) {
      const stereo = new Float32Array(2 * count);
      for (let c = 0; c < 2; c++) {
        const plane = planes[s * channels + Math.min(c, channels - 1)] as Float32Array;
        for (let i = 0; i < count; i++) stereo[c * count + i] = (plane[i] as number) * std + mean;
      }
      stems.push(stereo);
    }
    if (settings.target === null) return write(stems, count);
    const mix = new Float32Array(2 * count);
    for (let c = 0; c < 2; c++) for (let i = 0; i < count; i++) mix[c * count + i] = window.sample(c, start + i);
    if (inverter !== undefined) return inverter.push(stems, mix, count);
    const target = stems[0] as Float32Array;
    return write([...stems, mix.map((value, i) => value - (target[i] as number))], count);
  };
  try {
    const forward = (chunk: Float32Array) => network.forward(chunk);
    await demixStream(knobs.tta === true ? withTta(forward, channels) : forward, source, channels, numStems, demixSettings(settings, knobs), toStems, {
      onProgress: (done, total) => options.onProgress?.({ done, total }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    await window.finish();
  } catch (error) {
    await window.close().catch(() => undefined);
    throw error;
  }
}
