/**
 * VR's streamed separation (src/vr/stream.ts) against its whole-track computation: a song of six
 * copies of the VR fixtures' input (18 s, so `stemsplit split` cuts it into six or seven blocks of
 * frames) split through the real CLI with each fixture's model data and settings (one band, four
 * bands with high_end_process, VR 5.1 with TTA, post-processing) gives, stem by stem, what the
 * library gives when it computes the whole track in one block (≥ 100 dB; here bit for bit), and so
 * does the library with small blocks of an odd size. Progress runs from the first window to the last.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runCli } from './support/process.js';
import { v50Tensors, writeVrPth } from './support/vr-state-dict.js';
import { readVrModelData } from '../src/vr/model-data.js';
import { separateVr, VrNetwork, vrSettings, vrSources } from '../src/vr/engine.js';
import { VR_DEFAULTS, type VrOptions } from '../src/vr/options.js';
import type { StereoWave } from '../src/vr/spectrogram.js';
import { fixtureDir, fixtureManifest } from './support/fixtures.js';
import { decodePlanar, readF32, snrDb, writeFloatWav } from './support/reference-audio.js';
import { tempDir } from './support/server.js';

const FIXTURES = fixtureDir('vr');
const MIN_DB = 100;
const COPIES = 6;
const work = tempDir('stemsplit-vr-stream-');
after(() => rmSync(work, { recursive: true, force: true }));

interface Fixture {
  readonly files: { readonly model: { readonly path: string }; readonly input: { readonly path: string; readonly shape: readonly [number, number] } };
  readonly model_data: Record<string, unknown>;
  readonly options: Record<string, number | boolean>;
}

/** python-audio-separator's vr_params keys → stemsplit's options and flags. */
const KEYS: readonly (readonly [key: string, option: keyof VrOptions, flag: string])[] = [
  ['window_size', 'windowSize', '--vr-window-size'],
  ['aggression', 'aggression', '--vr-aggression'],
  ['enable_tta', 'enableTta', '--vr-enable-tta'],
  ['enable_post_process', 'enablePostProcess', '--vr-enable-post-process'],
  ['post_process_threshold', 'postProcessThreshold', '--vr-post-process-threshold'],
  ['high_end_process', 'highEndProcess', '--vr-high-end-process'],
];

function changed(fixture: Fixture): (readonly [option: keyof VrOptions, flag: string, value: number | boolean])[] {
  return KEYS.flatMap(([key, option, flag]) => {
    const value = fixture.options[key];
    return value === undefined || value === VR_DEFAULTS[option] ? [] : [[option, flag, value] as const];
  });
}

/** The fixture input ten times over, planar. */
function song(fixture: Fixture): StereoWave {
  const [channels, length] = fixture.files.input.shape;
  const input = readF32(join(FIXTURES as string, fixture.files.input.path));
  const wave = Array.from({ length: channels }, () => new Float64Array(COPIES * length));
  for (let copy = 0; copy < COPIES; copy++)
    for (let c = 0; c < channels; c++) (wave[c] as Float64Array).set(input.subarray(c * length, (c + 1) * length), copy * length);
  return wave as StereoWave;
}

function planar(stem: StereoWave, length: number): Float32Array {
  const out = new Float32Array(2 * length);
  out.set(stem[0].subarray(0, length));
  out.set(stem[1].subarray(0, length), length);
  return out;
}

describe('VR streamed in blocks = VR over the whole track', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of fixtureManifest<Fixture>(FIXTURES)) {
    it(`${name}: stemsplit split and small blocks give the whole-track stems (≥ ${MIN_DB} dB)`, async (t) => {
      const dir = join(work, name);
      mkdirSync(dir, { recursive: true });
      const model = join(dir, `${name}.pth`);
      copyFileSync(join(FIXTURES as string, fixture.files.model.path), model);
      writeFileSync(join(dir, `${name}.json`), JSON.stringify(fixture.model_data));
      const track = song(fixture);
      const length = track[0].length;
      const wav = join(dir, 'song.wav');
      writeFloatWav(wav, planar(track, length), 2);

      const options = Object.fromEntries(changed(fixture).map(([option, , value]) => [option, value])) as Partial<VrOptions>;
      const settings = vrSettings(readVrModelData(model), options);
      const network = await VrNetwork.open(model, settings, { intraOpThreads: 2 });
      let whole: [StereoWave, StereoWave];
      let small: [StereoWave, StereoWave];
      const progress: number[] = [];
      try {
        whole = await separateVr(network, settings, track, { blockFrames: Infinity });
        small = await separateVr(network, settings, track, { blockFrames: 37, onProgress: ({ done, total }) => progress.push(done / total) });
      } finally {
        await network.release();
      }
      const kept = whole[0][0].length;
      assert.ok(kept > 0.99 * length, `${kept} of ${length} samples`);
      assert.ok(
        progress.length > 2 && progress.every((p, i) => i === 0 || p > (progress[i - 1] as number)) && progress.at(-1) === 1,
        `progress ${progress.join(' ')}`,
      );

      const flags = changed(fixture).flatMap(([, flag, value]) => (typeof value === 'boolean' ? [flag] : [flag, String(value)]));
      const out = join(dir, 'out');
      const split = runCli(['split', wav, '--model', model, ...flags, '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: join(dir, 'cache'),
      });
      assert.equal(split.status, 0, split.stderr);
      const files = vrSources(settings.data.primaryStem).map((stem) => join(out, 'song', `${stem}.wav`));
      for (const [s, file] of files.entries()) {
        const reference = planar(whole[s] as StereoWave, kept);
        const decoded = decodePlanar(file, 2);
        const cli = new Float32Array(2 * kept);
        for (let c = 0; c < 2; c++) {
          cli.set(decoded.subarray(c * length, c * length + kept), c * kept);
          assert.ok(
            decoded.subarray(c * length + kept, (c + 1) * length).every((v) => v === 0),
            `${file}: silent after ${kept} samples`,
          );
        }
        const inBlocks = planar(small[s] as StereoWave, kept);
        const viaCli = snrDb(reference, cli);
        const viaSmall = snrDb(reference, inBlocks);
        const differing = (stem: Float32Array) => stem.reduce((count, v, i) => count + (v === reference[i] ? 0 : 1), 0);
        t.diagnostic(
          `${name} stem ${s}: split ${viaCli.toFixed(1)} dB (${differing(cli)} samples differ), blocks of 37 frames ${viaSmall.toFixed(1)} dB (${differing(inBlocks)} differ) against the whole track`,
        );
        assert.ok(viaCli >= MIN_DB, `${file}: ${viaCli} dB`);
        assert.ok(viaSmall >= MIN_DB, `stem ${s} in blocks of 37 frames: ${viaSmall} dB`);
      }
    });
  }
});

/**
 * The params the fixtures do not cover, on a small seeded VR 5.0 network: those not at 44.1 kHz
 * (the track resampled in as it is read, each stem back as it is written, rate.ts) and
 * `4band_44100_reverse`. A generated song through `stemsplit split` and through the library in
 * blocks of 11 frames gives the library's stems computed in one block, sample for sample.
 */
describe('VR params at other rates and reversed: streamed = one block', () => {
  const SECONDS = 3;
  const WINDOW = 320;
  const PARAMS = ['1band_sr16000_hl512', '1band_sr32000_hl512', '1band_sr33075_hl384', '2band_32000', '2band_48000', '4band_44100_reverse'];

  /** Tones, a glide and seeded noise bursts, different in each channel. */
  function generated(): StereoWave {
    const length = SECONDS * 44_100;
    let seed = 7;
    const noise = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31 - 0.5;
    };
    return [0, 1].map((c) =>
      Float64Array.from({ length }, (_, i) => {
        const t = i / 44_100;
        const burst = t % 0.5 < 0.05 ? 0.3 * noise() : 0.02 * noise();
        return Math.fround(0.3 * Math.sin(2 * Math.PI * 220 * t + c) + 0.15 * Math.sin(2 * Math.PI * (500 + 400 * t) * t) + burst);
      }),
    ) as StereoWave;
  }

  for (const param of PARAMS) {
    it(`${param}: stemsplit split and blocks of 11 frames give the one-block stems, no sample differing`, async (t) => {
      const dir = join(work, param);
      mkdirSync(dir, { recursive: true });
      const model = join(dir, 'seeded.pth');
      writeVrPth(model, v50Tensors(4, false, 5), { output: true });
      writeFileSync(join(dir, 'seeded.json'), JSON.stringify({ vr_model_param: param, primary_stem: 'Instrumental' }));
      const track = generated();
      const length = track[0].length;
      const wav = join(dir, 'song.wav');
      writeFloatWav(wav, planar(track, length), 2);

      const settings = vrSettings(readVrModelData(model), { windowSize: WINDOW });
      const network = await VrNetwork.open(model, settings, { intraOpThreads: 2 });
      let whole: [StereoWave, StereoWave];
      let small: [StereoWave, StereoWave];
      try {
        whole = await separateVr(network, settings, track, { blockFrames: Infinity });
        small = await separateVr(network, settings, track, { blockFrames: 11 });
      } finally {
        await network.release();
      }
      const kept = whole[0][0].length;
      assert.ok(kept > 0.95 * length, `${kept} of ${length} samples`);

      // The spool a SIGKILLed worker left (its pid is above any pid_max, so no process has it): the next reverse split removes it.
      const abandoned = join(tmpdir(), 'stemsplit-vr-reverse-4194305-abandoned');
      if (param.endsWith('_reverse')) {
        mkdirSync(abandoned, { recursive: true });
        writeFileSync(join(abandoned, 'track.f32'), new Uint8Array(8));
      }
      const out = join(dir, 'out');
      const split = runCli(['split', wav, '--model', model, '--vr-window-size', String(WINDOW), '--format', 'wav', '--float32', '-o', out], {
        STEMSPLIT_DATA_DIR: join(dir, 'data'),
        STEMSPLIT_CACHE_DIR: join(dir, 'cache'),
      });
      assert.equal(split.status, 0, split.stderr);
      assert.equal(existsSync(abandoned), false, "a killed worker's spool is removed by the next reverse split");
      for (const [s, stem] of vrSources(settings.data.primaryStem).entries()) {
        const reference = planar(whole[s] as StereoWave, kept);
        assert.ok(snrDb(reference, planar(track, kept)) < 60, `stem ${s} is not the mix`);
        const decoded = decodePlanar(join(out, 'song', `${stem}.wav`), 2);
        const cli = new Float32Array(2 * kept);
        for (let c = 0; c < 2; c++) {
          cli.set(decoded.subarray(c * length, c * length + kept), c * kept);
          assert.ok(
            decoded.subarray(c * length + kept, (c + 1) * length).every((v) => v === 0),
            `${stem}: silent after ${kept} samples`,
          );
        }
        const differing = (other: Float32Array) => other.reduce((count, v, i) => count + (v === reference[i] ? 0 : 1), 0);
        const inBlocks = planar(small[s] as StereoWave, kept);
        t.diagnostic(`${param} ${stem}: split ${differing(cli)} samples differ, blocks of 11 frames ${differing(inBlocks)} differ, of ${2 * kept}`);
        assert.equal(differing(cli), 0, `${param} ${stem} through split`);
        assert.equal(differing(inBlocks), 0, `${param} ${stem} in blocks of 11 frames`);
      }
    });
  }
});
