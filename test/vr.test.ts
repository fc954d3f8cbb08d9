/**
 * UVR's VR-architecture `.pth` models against python-audio-separator's VR separator, with the
 * reference stems of ../shared/fixtures/vr (or STEMSPLIT_SHARED_DIR's): every fixture
 * fixtures.json lists, with its own model data and options, through the library (`loadVr` + the
 * streamed pipeline), each stem at ≥ 65 dB SNR over the official output's length (the stems
 * are silent after it). Also: libsamplerate's SINC_FASTEST against the reference's own sine
 * checks, UVR's size rule, the model data and the refusals a user meets.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { StemsplitError } from '../src/errors.js';
import { VR_CATALOG } from '../src/vr/catalog.js';
import { taskOf } from '../src/models/tasks.js';
import { runCli } from './support/process.js';
import { separate } from '../src/separation/index.js';
import { loadVr, nnArchSize, vrSources } from '../src/vr/engine.js';
import { vrWindows } from '../src/vr/geometry.js';
import { builtInVrModelData, readVrModelData, uvrVrModelName } from '../src/vr/model-data.js';
import type { VrOptions } from '../src/vr/options.js';
import { vrParams, VR_PARAM_NAMES } from '../src/vr/params.js';
import { resamplePoly, sincFastest } from '../src/vr/resample.js';
import { tempDir } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';
import { assertSnrs, readF32, snrDb } from './support/reference-audio.js';

const FIXTURES = fixtureDir('vr');
const MIN_SNR_DB = 65;
const work = tempDir('stemsplit-vr-');
after(() => spawnSync('rm', ['-rf', work]));

interface Fixture {
  readonly files: {
    readonly model: { readonly path: string };
    readonly input: { readonly path: string; readonly shape: readonly [number, number] };
    readonly output: { readonly path: string; readonly shape: readonly [number, number, number] };
  };
  readonly model_data: Record<string, unknown> & { readonly primary_stem: string };
  readonly options: {
    readonly batch_size: number;
    readonly window_size: number;
    readonly aggression: number;
    readonly enable_tta: boolean;
    readonly enable_post_process: boolean;
    readonly post_process_threshold: number;
    readonly high_end_process: boolean;
  };
}

interface Derived {
  readonly n_frames: number;
  readonly offset: number;
  readonly roi_size: number;
  readonly patches: number;
  readonly tta?: { readonly patches: number };
}

interface Manifest {
  readonly fixtures: Record<string, Fixture & { readonly derived: Derived; readonly options: { readonly window_size: number } }>;
  readonly self_checks: {
    readonly libsamplerate_sines: Record<
      string,
      { readonly out_frames: number; readonly interior_snr_db: number; readonly first_50ms_snr_db: number; readonly last_50ms_snr_db: number }
    >;
  };
}

function manifest(): Manifest {
  return JSON.parse(readFileSync(path.join(FIXTURES as string, 'fixtures.json'), 'utf8')) as Manifest;
}

function vrOptionsOf(fixture: Fixture): VrOptions {
  const o = fixture.options;
  return {
    batchSize: o.batch_size,
    windowSize: o.window_size,
    aggression: o.aggression,
    enableTta: o.enable_tta,
    enablePostProcess: o.enable_post_process,
    postProcessThreshold: o.post_process_threshold,
    highEndProcess: o.high_end_process,
  };
}

/**
 * The fixture's model as a user has it: NAME.pth with NAME.json beside it (two fixtures share
 * one .pth with other model data), in a folder of its own.
 */
function modelAsShipped(name: string, fixture: Fixture): string {
  const dir = path.join(work, 'models', name);
  mkdirSync(dir, { recursive: true });
  const model = path.join(dir, `${name}.pth`);
  copyFileSync(path.join(FIXTURES as string, fixture.files.model.path), model);
  writeFileSync(path.join(dir, `${name}.json`), JSON.stringify(fixture.model_data));
  return model;
}

/** Each stem's SNR over the reference's M samples per channel; what follows M must be silence. */
function stemSnrsOverReference(
  label: string,
  reference: Float32Array,
  shape: readonly [number, number, number],
  stems: readonly Float32Array[],
  names: readonly string[],
): void {
  const [, channels, m] = shape;
  const snrs = stems.map((stem, s) => {
    const length = stem.length / channels;
    assert.ok(length >= m, `${label}: ${length} samples, the reference has ${m}`);
    const head = new Float32Array(channels * m);
    for (let c = 0; c < channels; c++) {
      head.set(stem.subarray(c * length, c * length + m), c * m);
      assert.ok(
        stem.subarray(c * length + m, (c + 1) * length).every((v) => v === 0),
        `${label}: the stem is not silent after the official output's ${m} samples`,
      );
    }
    return snrDb(reference.subarray(s * channels * m, (s + 1) * channels * m), head);
  });
  assertSnrs(label, snrs, MIN_SNR_DB, names);
}

describe('VR fixtures', { skip: FIXTURES === undefined ? 'no fixtures' : false }, () => {
  for (const [name, fixture] of FIXTURES === undefined ? [] : Object.entries(manifest().fixtures)) {
    it(`${name}: the library matches audio-separator's VR separator`, async () => {
      const progress: number[] = [];
      const model = await loadVr({ path: modelAsShipped(name, fixture), options: { vr: vrOptionsOf(fixture) } }, { intraOpThreads: 2 });
      try {
        const sources = vrSources(fixture.model_data.primary_stem);
        assert.deepEqual(model.sources, sources);
        const [, length] = fixture.files.input.shape;
        const stems = await separate(
          model,
          { data: readF32(path.join(FIXTURES as string, fixture.files.input.path)), length },
          { onProgress: ({ done, total }) => progress.push(done / total) },
        );
        assert.equal(progress.at(-1), 1);
        stemSnrsOverReference(`${name} library`, readF32(path.join(FIXTURES as string, fixture.files.output.path)), fixture.files.output.shape, stems, sources);
      } finally {
        await model.dispose();
      }
    });
  }

  it("lays the network's windows out as make_padding does (fixtures.json's derived geometry, TTA's second pass too)", () => {
    for (const [name, fixture] of Object.entries(manifest().fixtures)) {
      const { n_frames: frames, offset, roi_size: roi, patches, tta } = fixture.derived;
      assert.deepEqual(vrWindows(frames, fixture.options.window_size, offset, 0), { roi, patches }, name);
      if (tta) assert.equal(vrWindows(frames, fixture.options.window_size, offset, Math.floor(roi / 2)).patches, tta.patches, name);
    }
  });

  it("reproduces libsamplerate's SINC_FASTEST on the reference's sine checks (interior and both 50 ms edges, to 0.01 dB)", () => {
    for (const [label, expected] of Object.entries(manifest().self_checks.libsamplerate_sines)) {
      const match = /^(\d+)->(\d+) ([\d.]+)Hz sinc_fastest$/.exec(label);
      if (match === null) continue;
      const [from, to, frequency] = [Number(match[1]), Number(match[2]), Number(match[3])];
      const input = new Float64Array(4 * from).map((_, i) => Math.fround(0.5 * Math.sin((2 * Math.PI * frequency * i) / from)));
      const output = sincFastest(input, to / from);
      assert.equal(output.length, expected.out_frames, label);
      const edge = Math.round(0.05 * to);
      // In float64: at 120 dB, rounding the ideal sine to float32 would move the figure.
      const snr = (a: number, b: number): number => {
        let signal = 0;
        let noise = 0;
        for (let j = a; j < b; j++) {
          const ideal = 0.5 * Math.sin((2 * Math.PI * frequency * j) / to);
          signal += ideal ** 2;
          noise += (ideal - (output[j] as number)) ** 2;
        }
        return 10 * Math.log10(signal / noise);
      };
      assert.ok(Math.abs(snr(edge, output.length - edge) - expected.interior_snr_db) < 0.01, `${label} interior`);
      assert.ok(Math.abs(snr(0, edge) - expected.first_50ms_snr_db) < 0.01, `${label} first 50 ms`);
      assert.ok(Math.abs(snr(output.length - edge, output.length) - expected.last_50ms_snr_db) < 0.01, `${label} last 50 ms`);
    }
  });

  it('refuses, in one line, a .pth neither the table nor a json beside it describes', async () => {
    const [, fixture] = Object.entries(manifest().fixtures)[0] as [string, Fixture];
    const dir = path.join(work, 'unknown');
    mkdirSync(dir, { recursive: true });
    const lonely = path.join(dir, 'mystery.pth');
    copyFileSync(path.join(FIXTURES as string, fixture.files.model.path), lonely);
    assert.throws(
      () => readVrModelData(lonely),
      /mystery\.pth: VR model with hash [0-9a-f]{32} is not in stemsplit's table of UVR models; put its model data \(vr_model_param, primary_stem, and nout, nout_lstm for VR 5\.1\) in .*mystery\.json/,
    );
    writeFileSync(path.join(dir, 'mystery.json'), JSON.stringify({ vr_model_param: '5band_nowhere', primary_stem: 'Vocals' }));
    assert.throws(() => readVrModelData(lonely), /mystery\.json: vr_model_param must be one of 1band_sr16000_hl512, .*, got "5band_nowhere"/);
    writeFileSync(path.join(dir, 'mystery.json'), JSON.stringify({ vr_model_param: '1band_sr44100_hl512', primary_stem: 'Vocals' }));
    await assert.rejects(loadVr({ path: lonely, options: { vr: { windowSize: 256 } } }), (error: unknown) => {
      assert.ok(error instanceof StemsplitError && error.code === 'USAGE');
      assert.match(error.message, /--vr-window-size 256 leaves no frames: a VR 5\.0 network crops 128 frames at each end of a window/);
      return true;
    });
    await assert.rejects(loadVr({ path: lonely, options: { vr: { aggression: 101 } } }), /--vr-aggression must be a whole number from -100 to 100, got "101"/);
  });
});

describe('VR model params and data', () => {
  it("holds all 26 params files of UVR's vr_network/modelparams, each band's crop inside its spectrum", () => {
    assert.equal(VR_PARAM_NAMES.length, 26);
    for (const name of VR_PARAM_NAMES) {
      const params = vrParams(name, 'test');
      let bins = 0;
      for (const band of params.bands) {
        assert.ok(band.cropStop <= band.nFft / 2 + 1 && band.cropStart >= 0, `${name}: crop`);
        bins += band.cropStop - band.cropStart;
      }
      assert.ok(bins <= params.bins, `${name}: ${bins} bins stacked into ${params.bins}`);
      assert.equal(params.bands.at(-1)?.sr, params.sr, `${name}: the top band runs at the model's rate`);
    }
    assert.equal(vrParams('4band_v3_sn.json', 'test').bands[3]?.convertChannels, 'stereo_n');
    assert.equal(vrParams('4band_44100_reverse', 'test').channels, 'reverse');
  });

  it("picks UVR's architecture class by file size as vr_separator.py does", () => {
    assert.equal(nnArchSize(685_355), 31191);
    assert.equal(nnArchSize(1_287_967), 31191);
    assert.equal(nnArchSize(56_817 * 1024 + 300), 56817);
    assert.equal(nnArchSize(218_409 * 1024), 218409);
    assert.equal(nnArchSize(537_230 * 1024), 537227);
  });

  it("carries UVR's model data for the VR task models, and names stems as UVR does, lower-cased", () => {
    assert.deepEqual(builtInVrModelData('6857b2972e1754913aad0c9a1678c753'), {
      vrModelParam: '4band_v3',
      primaryStem: 'No Echo',
      nout: 48,
      noutLstm: 128,
      isKaraoke: false,
      isBvModel: false,
      origin: 'the built-in UVR model data (UVR-De-Echo-Aggressive)',
    });
    assert.equal(builtInVrModelData('0123456789abcdef0123456789abcdef'), undefined);
    assert.deepEqual(vrSources('No Echo'), ['no_echo', 'echo']);
    assert.deepEqual(vrSources('Instrumental'), ['instrumental', 'vocals']);
    assert.deepEqual(vrSources('Noise'), ['noise', 'no_noise']);
  });

  it("resamples as scipy's resample_poly does: a band-limited sine keeps its samples, lengths are ⌈n·up/down⌉", () => {
    const input = new Float64Array(44_100).map((_, i) => Math.sin((2 * Math.PI * 440 * i) / 44_100));
    const down = resamplePoly(input, 44_100, 14_700);
    assert.equal(down.length, 14_700);
    // Away from the edges the filter passes 440 Hz at unit gain: samples of the same sine at the new rate.
    for (let j = 1000; j < 13_700; j += 101) assert.ok(Math.abs((down[j] as number) - Math.sin((2 * Math.PI * 440 * j) / 14_700)) < 2e-3, `sample ${j}`);
    assert.equal(resamplePoly(new Float64Array(1001), 11_025, 44_100).length, 4004);
  });

  it("lists UVR's VR task models in the catalog with the stems, task and file UVR's table gives their key", () => {
    const entries = VR_CATALOG;
    assert.ok(entries.length >= 7);
    const tasks: Record<string, string> = {};
    for (const entry of entries) {
      const data = builtInVrModelData(entry.uvrHash as string);
      assert.ok(data, `${entry.name}: its UVR key is in the engine's table`);
      assert.deepEqual(entry.sources, vrSources(data.primaryStem), entry.name);
      assert.equal(`${uvrVrModelName(entry.uvrHash as string)}.pth`, entry.files[0], entry.name);
      tasks[entry.name] = taskOf(entry.name, entry.sources);
    }
    assert.deepEqual(tasks, {
      '5-hp-karaoke-uvr': 'karaoke',
      '6-hp-karaoke-uvr': 'karaoke',
      'uvr-deecho-dereverb': 'dereverb',
      'uvr-de-echo-normal': 'deecho',
      'uvr-de-echo-aggressive': 'deecho',
      'uvr-denoise': 'denoise',
      'uvr-denoise-lite': 'denoise',
    });
  });

  it('pulls a VR model only when the file is the one its UVR key names: another file is refused and deleted', () => {
    const dir = path.join(work, 'pull');
    mkdirSync(dir, { recursive: true });
    const impostor = path.join(dir, 'UVR-De-Echo-Normal.pth');
    writeFileSync(impostor, 'not the model UVR keys as f200a145');
    const cache = path.join(dir, 'cache');
    const result = runCli(['models', 'pull', 'uvr-de-echo-normal', '--file', impostor], {
      STEMSPLIT_DATA_DIR: path.join(dir, 'data'),
      STEMSPLIT_CACHE_DIR: cache,
    });
    assert.equal(result.status, new StemsplitError('DOWNLOAD_FAILED', '').exitCode, result.stderr);
    assert.match(
      result.stderr,
      /UVR-De-Echo-Normal\.pth has UVR hash [0-9a-f]{32}, not f200a145434efc7dcf0cd093f517ed52 \(the file UVR's model data is for\); the file was deleted/,
    );
    assert.equal(existsSync(path.join(cache, 'vr', 'UVR-De-Echo-Normal.pth')), false);
  });
});
