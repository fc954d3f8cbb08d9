/**
 * Ensembles as users run them: `split --model A --model B --model C --ensemble ALGO` through the
 * CLI, and a server whose `4s` is `A+B`. Members: the two bundled 4-stem models and a
 * single-target RoFormer (the random-weight fixture bs_roformer_vocals: vocals + no_vocals).
 *
 * Every algorithm's stems are checked against a plain whole-track computation written here:
 * each member's own stems come from a separate single-model run (float32 WAV), and are combined
 * sample by sample or through a whole-track STFT (librosa's framing: n_fft 2048, hop 1024,
 * periodic Hann, centred, zero-padded; istft divides by the summed squared window).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { resolveConfig } from '../src/config.js';
import { Fft } from '../src/dsp/fft.js';
import { ENSEMBLE_ALGORITHMS, type EnsembleAlgorithm } from '../src/ensemble/algorithms.js';
import { catalogModel } from '../src/models/catalog.js';
import { modelLoader } from '../src/models/loaders.js';
import { ModelCache, ModelRegistry, isEnsembleRef, modelDir, type ModelRef } from '../src/models/registry.js';
import { splitAudioFile } from '../src/split-worker/split-audio-file.js';
import { writeSong } from './support/audio.js';
import { ApiClient } from './support/client.js';
import { killHard, runCli, startServeProcess } from './support/process.js';
import { startTestServer, tempDir, uploadFile, waitForSplit } from './support/server.js';
import { fixtureDir } from './support/fixtures.js';
import { decodePlanar, snrDb } from './support/reference-audio.js';

const FIXTURES = fixtureDir('roformer');
const work = tempDir('stemsplit-ensemble-');
after(() => spawnSync('rm', ['-rf', work]));

const SONG = join(work, 'song.wav');
/** 1.7 s: not a whole number of hops, so the STFT's last frame and the UVR tail are exercised. */
const SECONDS = 1.7;
const ENV = { STEMSPLIT_DATA_DIR: join(work, 'data'), STEMSPLIT_CACHE_DIR: join(work, 'cache') };
const VOCALS_CKPT = join(work, 'voc.ckpt');
const MEMBERS = ['bundled-4s', 'stemsplit-small-4s', VOCALS_CKPT];

type Stems = Record<string, Float32Array>;

function split(args: readonly string[], out: string): Stems {
  const result = runCli(['split', SONG, ...args, '--format', 'wav', '--float32', '-o', out], ENV);
  assert.equal(result.status, 0, result.stderr);
  const dir = join(out, 'song');
  return Object.fromEntries(readdirSync(dir).map((file) => [file.replace(/\.wav$/, ''), decodePlanar(join(dir, file), 2)]));
}

/** Each member's part in each stem, as docs/ensembles.md states the rule: its own stem, or for no_X the sum of its stems but X. */
function partsOf(members: readonly Stems[], stem: string): Float32Array[] {
  return members.flatMap((own) => {
    if (own[stem]) return [own[stem] as Float32Array];
    if (!stem.startsWith('no_') || !own[stem.slice(3)]) return [];
    const order = ['drums', 'bass', 'other', 'vocals'].filter((name) => name !== stem.slice(3));
    const sum = new Float32Array((own[stem.slice(3)] as Float32Array).length);
    for (const name of order) for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) + ((own[name] as Float32Array)[i] as number);
    return [sum];
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 ? (sorted[middle] as number) : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2;
}

function pick(values: number[], key: (i: number) => number, greatest: boolean, lastOnTie = false): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) {
    const better = greatest ? key(i) > key(best) : key(i) < key(best);
    if (better || (lastOnTie && key(i) === key(best))) best = i;
  }
  return best;
}

function waveReference(algorithm: EnsembleAlgorithm, parts: readonly Float32Array[], weights: readonly number[]): Float32Array {
  const out = new Float32Array((parts[0] as Float32Array).length);
  const total = weights.reduce((a, b) => a + b, 0);
  for (let i = 0; i < out.length; i++) {
    const values = parts.map((part) => part[i] as number);
    if (algorithm === 'avg_wave') out[i] = values.reduce((sum, value, m) => sum + value * (weights[m] as number), 0) / total;
    else if (algorithm === 'median_wave') out[i] = median(values);
    else out[i] = values[pick(values, (m) => Math.abs(values[m] as number), algorithm === 'max_wave')] as number;
  }
  return out;
}

const N = 2048;
const HOP = 1024;
const HANN = Array.from({ length: N }, (_, n) => 0.5 - 0.5 * Math.cos((2 * Math.PI * n) / N));

/** librosa.stft of one channel (centred, zero padding): frames × (N/2 + 1) complex bins. */
function stft(signal: Float32Array): Array<{ re: Float64Array; im: Float64Array }> {
  const fft = new Fft(N);
  const frames = 1 + Math.floor(signal.length / HOP);
  return Array.from({ length: frames }, (_, k) => {
    const re = new Float64Array(N);
    const im = new Float64Array(N);
    for (let n = 0; n < N; n++) {
      const at = k * HOP + n - N / 2;
      re[n] = at >= 0 && at < signal.length ? (HANN[n] as number) * (signal[at] as number) : 0;
    }
    fft.forward(re, im);
    return { re: re.slice(0, N / 2 + 1), im: im.slice(0, N / 2 + 1) };
  });
}

/** librosa.istft: inverse frames, windowed, overlap-added, divided by the summed squared window, cut to `length` samples (zeros past it). */
function istft(spectra: Array<{ re: Float64Array; im: Float64Array }>, length: number, kept: number): Float32Array {
  const fft = new Fft(N);
  const padded = new Float64Array(N + HOP * (spectra.length - 1));
  const envelope = new Float64Array(padded.length);
  for (const [k, { re, im }] of spectra.entries()) {
    const fullRe = new Float64Array(N);
    const fullIm = new Float64Array(N);
    for (let bin = 0; bin <= N / 2; bin++) {
      fullRe[bin] = re[bin] as number;
      fullIm[bin] = bin === 0 || bin === N / 2 ? 0 : (im[bin] as number);
      if (bin > 0 && bin < N / 2) {
        fullRe[N - bin] = re[bin] as number;
        fullIm[N - bin] = -(im[bin] as number);
      }
    }
    fft.inverse(fullRe, fullIm);
    for (let n = 0; n < N; n++) {
      padded[k * HOP + n] = (padded[k * HOP + n] as number) + ((fullRe[n] as number) / N) * (HANN[n] as number);
      envelope[k * HOP + n] = (envelope[k * HOP + n] as number) + (HANN[n] as number) ** 2;
    }
  }
  const out = new Float32Array(length);
  for (let i = 0; i < Math.min(kept, length); i++) out[i] = (padded[i + N / 2] as number) / (envelope[i + N / 2] as number);
  return out;
}

function spectralReference(algorithm: EnsembleAlgorithm, parts: readonly Float32Array[], weights: readonly number[]): Float32Array {
  const length = (parts[0] as Float32Array).length / 2;
  const out = new Float32Array(2 * length);
  const total = weights.reduce((a, b) => a + b, 0);
  for (let channel = 0; channel < 2; channel++) {
    const specs = parts.map((part) => stft(part.subarray(channel * length, (channel + 1) * length)));
    const combined = (specs[0] as ReturnType<typeof stft>).map((_, frame) => {
      const re = new Float64Array(N / 2 + 1);
      const im = new Float64Array(N / 2 + 1);
      for (let bin = 0; bin <= N / 2; bin++) {
        const res = specs.map((spec) => spec[frame]?.re[bin] as number);
        const ims = specs.map((spec) => spec[frame]?.im[bin] as number);
        const magnitude = (m: number) => Math.hypot(res[m] as number, ims[m] as number);
        let chosen: [number, number];
        if (algorithm === 'avg_fft')
          chosen = [res.reduce((s, v, m) => s + v * (weights[m] as number), 0) / total, ims.reduce((s, v, m) => s + v * (weights[m] as number), 0) / total];
        else if (algorithm === 'median_fft') chosen = [median(res), median(ims)];
        else {
          const index = pick(res, magnitude, algorithm === 'max_fft' || algorithm === 'uvr_max_spec', algorithm.startsWith('uvr_'));
          chosen = [res[index] as number, ims[index] as number];
        }
        [re[bin], im[bin]] = chosen;
      }
      return { re, im };
    });
    // UVR's istft has no length: it stops at hop × (frames − 1), and the rest is silence.
    const kept = algorithm.startsWith('uvr_') ? HOP * (combined.length - 1) : length;
    out.set(istft(combined, length, kept), channel * length);
  }
  return out;
}

function reference(algorithm: EnsembleAlgorithm, parts: readonly Float32Array[], weights: readonly number[]): Float32Array {
  if (parts.length === 1) return parts[0] as Float32Array;
  return algorithm.endsWith('_wave') ? waveReference(algorithm, parts, weights) : spectralReference(algorithm, parts, weights);
}

function worstDifference(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs((a[i] as number) - (b[i] as number)));
  return worst;
}

describe('ensembles', { skip: FIXTURES === undefined ? 'no RoFormer fixtures' : false }, () => {
  const singles: Stems[] = [];

  before(() => {
    writeSong(SONG, SECONDS);
    copyFileSync(join(FIXTURES as string, 'bs_roformer_vocals.ckpt'), VOCALS_CKPT);
    copyFileSync(join(FIXTURES as string, 'bs_roformer_vocals.yaml'), join(work, 'voc.yaml'));
    for (const [index, member] of MEMBERS.entries()) singles.push(split(['--model', member], join(work, `single-${index}`)));
  });

  it("every algorithm through split matches a whole-track computation of the members' own stems", (t) => {
    const weighted: Partial<Record<EnsembleAlgorithm, number[]>> = { avg_wave: [3, 1, 2], avg_fft: [1, 2, 0.5] };
    for (const algorithm of ENSEMBLE_ALGORITHMS) {
      const weights = weighted[algorithm];
      const args = [
        ...MEMBERS.flatMap((member) => ['--model', member]),
        '--ensemble',
        algorithm,
        ...(weights ? ['--ensemble-weights', weights.join(',')] : []),
      ];
      const stems = split(args, join(work, `ens-${algorithm}`));
      assert.deepEqual(Object.keys(stems).sort(), ['bass', 'drums', 'no_vocals', 'other', 'vocals'], algorithm);
      const figures: string[] = [];
      for (const [stem, actual] of Object.entries(stems)) {
        const parts = partsOf(singles, stem);
        assert.equal(parts.length, stem === 'vocals' || stem === 'no_vocals' ? 3 : 2, `${stem}: members taking part`);
        const memberWeights = singles.flatMap((own, m) => (partsOf([own], stem).length > 0 ? [weights?.[m] ?? 1] : []));
        const expected = reference(algorithm, parts, memberWeights);
        // How far the combination is from simply the first member's stem: what the check tells apart.
        const apart = snrDb(expected, parts[0] as Float32Array).toFixed(1);
        if (algorithm.endsWith('_wave')) {
          const worst = worstDifference(expected, actual);
          figures.push(`${stem} ${worst.toExponential(1)} (first member alone: ${apart} dB)`);
          assert.ok(worst <= 2e-7, `${algorithm} ${stem}: differs by ${worst}`);
        } else {
          const snr = snrDb(expected, actual);
          figures.push(`${stem} ${snr.toFixed(1)} dB (first member alone: ${apart} dB)`);
          assert.ok(snr >= 60, `${algorithm} ${stem}: ${snr.toFixed(1)} dB`);
        }
      }
      t.diagnostic(`${algorithm}: ${figures.join(', ')}`);
    }
  });

  it('A+B in one --model, --two-stems, and clear refusals', () => {
    const stems = split(['--model', `bundled-4s+${VOCALS_CKPT}`, '--two-stems', 'vocals', '--ensemble', 'avg_wave'], join(work, 'two'));
    assert.deepEqual(Object.keys(stems).sort(), ['no_vocals', 'vocals']);
    const ownPair = [singles[0] as Stems, singles[2] as Stems];
    for (const stem of ['vocals', 'no_vocals']) {
      const worst = worstDifference(reference('avg_wave', partsOf(ownPair, stem), [1, 1]), stems[stem] as Float32Array);
      assert.ok(worst <= 2e-7, `${stem}: ${worst}`);
    }
    const refusals: Array<[string[], RegExp]> = [
      [['--model', 'bundled-4s', '--model', 'stemsplit-small-4s', '--ensemble', 'loudest'], /--ensemble must be one of avg_wave, median_wave/],
      [['--model', 'bundled-4s', '--model', 'stemsplit-small-4s', '--ensemble-weights', '1,2,3'], /one weight per model \(2\), got 3/],
      [
        ['--model', 'bundled-4s', '--model', 'stemsplit-small-4s', '--ensemble', 'median_wave', '--ensemble-weights', '1,2'],
        /applies to avg_wave and avg_fft only/,
      ],
      [['--model', 'bundled-4s', '--ensemble', 'avg_fft'], /combine two or more models/],
      [['--model', 'bundled-4s+'], /each side needs one/],
    ];
    for (const [args, message] of refusals) {
      const result = runCli(['split', SONG, ...args, '-o', join(work, 'refused')], ENV);
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, message);
    }
    assert.equal(existsSync(join(work, 'refused')), false);
    assert.throws(() => resolveConfig({ modelAliases: { '4s': ['bundled-4s+'] } }, {}), /each side needs one/);
    assert.deepEqual(resolveConfig({}, { STEMSPLIT_MODEL_4S: 'a+b, c' }).modelAliases['4s'], ['a+b', 'c']);
  });

  it('progress runs 0 → 100 once over all members; a cancel mid-member and a finished split leave no spool', async () => {
    const registry = new ModelRegistry({ bundledDir: join(process.cwd(), 'models'), cacheDir: join(work, 'cache'), aliases: { '4s': [], '6s': [] } });
    const cache = new ModelCache(modelLoader({ cacheDir: join(work, 'cache'), intraOpThreads: 1 }));
    const choice = registry.resolve('bundled-4s+stemsplit-small-4s');
    assert.ok(isEnsembleRef(choice));
    const members = [];
    for (const ref of choice.members) members.push(await cache.load(ref as ModelRef));
    const ensemble = { name: choice.name, members, method: { algorithm: 'avg_fft' as const } };
    const dir = join(work, 'library');
    mkdirSync(dir, { recursive: true });
    const percents: number[] = [];
    const result = await splitAudioFile(SONG, ensemble, join(dir, 'done'), {
      format: 'wav',
      bitDepth: 32,
      onProgress: ({ percent }) => percents.push(percent),
    });
    assert.deepEqual(Object.keys(result.stems), ['drums', 'bass', 'other', 'vocals']);
    assert.ok(
      percents.every((p, i) => i === 0 || p >= (percents[i - 1] as number)),
      'progress never goes back',
    );
    assert.equal(percents.at(-1), 100);
    assert.ok(
      percents.some((p) => p > 45 && p < 55),
      'the first member ends halfway through the separation',
    );
    assert.deepEqual(readdirSync(dir), ['done'], 'no staging folder or spool left');

    const controller = new AbortController();
    const cancelled = splitAudioFile(SONG, ensemble, join(dir, 'cancelled'), {
      format: 'wav',
      signal: controller.signal,
      onProgress: ({ percent }) => {
        if (percent > 55) controller.abort();
      },
    });
    await assert.rejects(cancelled);
    assert.deepEqual(readdirSync(dir), ['done'], 'a cancelled ensemble leaves neither stems nor spools');
    await cache.disposeAll();
  });

  it('serve --ensemble reaches the jobs of its A+B; its flags are checked as split checks them', async (t) => {
    const env = { STEMSPLIT_DATA_DIR: join(work, 'serve-ensemble'), STEMSPLIT_CACHE_DIR: ENV.STEMSPLIT_CACHE_DIR };
    const refusals: Array<[string[], RegExp]> = [
      [['--ensemble', 'max_wave'], /--ensemble and --ensemble-weights combine an ensemble: join models with \+ in --model-4s or --model-6s/],
      [['--model-4s', `bundled-4s+${VOCALS_CKPT}`, '--ensemble', 'loudest'], /--ensemble must be one of avg_wave, median_wave/],
      [['--model-4s', `bundled-4s+${VOCALS_CKPT}`, '--ensemble-weights', '1,2,3'], /one weight per model \(2\), got 3/],
      [['--model-4s', `bundled-4s+${VOCALS_CKPT}`, '--ensemble', 'max_wave', '--ensemble-weights', '1,2'], /applies to avg_wave and avg_fft only/],
    ];
    for (const [args, message] of refusals) {
      const result = runCli(['serve', '--port', '0', ...args], env);
      assert.equal(result.status, 2, result.stderr);
      assert.match(result.stderr, message);
    }
    const created = runCli(['keys', 'create', '--json'], env);
    assert.equal(created.status, 0, created.stderr);
    const server = await startServeProcess(['--model-4s', `bundled-4s+${VOCALS_CKPT}`, '--ensemble', 'max_wave'], env);
    try {
      const client = new ApiClient(server.url, (JSON.parse(created.stdout) as { key: string }).key);
      const split = await client.request('POST', '/audio/splits', { body: { input: await client.upload(readFileSync(SONG), 'song.wav'), stemModel: '4s' } });
      assert.equal(split.status, 200, split.text);
      const done = (await client.waitForSplit(split.json.data.id)).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.model, `bundled-4s+voc`);
      const file = join(work, 'serve-max-vocals.mp3');
      writeFileSync(file, Buffer.from(await (await fetch(done.stems.vocals)).arrayBuffer()));
      const vocals = decodePlanar(file, 2);
      // The members' vocals, combined both ways: the job's are max_wave's (to MP3's precision), not the default average's.
      const parts = partsOf([singles[0] as Stems, singles[2] as Stems], 'vocals');
      const max = snrDb(reference('max_wave', parts, [1, 1]), vocals);
      const avg = snrDb(reference('avg_wave', parts, [1, 1]), vocals);
      t.diagnostic(`API vocals against max_wave ${max.toFixed(1)} dB, against avg_wave ${avg.toFixed(1)} dB`);
      assert.ok(max >= 15 && max >= avg + 6, `API vocals against max_wave ${max.toFixed(1)} dB, against avg_wave ${avg.toFixed(1)} dB`);
    } finally {
      await killHard(server.child);
    }
  });

  it('a server whose 4s is A+B splits with both, names both, and lists both under 4s', async () => {
    const cacheDir = join(work, 'server-cache');
    const viperx = catalogModel('bs-roformer-viperx-1297');
    assert.ok(viperx);
    const msst = modelDir(cacheDir, 'msst');
    mkdirSync(msst, { recursive: true });
    copyFileSync(VOCALS_CKPT, join(msst, viperx.files[0] as string));
    copyFileSync(join(work, 'voc.yaml'), join(msst, viperx.files[1] as string));
    const t = await startTestServer({ cacheDir, modelAliases: { '4s': ['bundled-4s+bs-roformer-viperx-1297', 'bundled-4s'] } });
    try {
      const input = await uploadFile(t, readFileSync(SONG));
      const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
      assert.equal(created.status, 200, created.text);
      const done = (await waitForSplit(t, created.json.data.id)).json.data;
      assert.equal(done.status, 'succeeded', JSON.stringify(done.error));
      assert.equal(done.model, 'bundled-4s+bs-roformer-viperx-1297');
      assert.deepEqual(Object.keys(done.stems).sort(), ['bass', 'drums', 'no_vocals', 'other', 'vocals']);
      // The MP3 vocals are the average of both members' vocals (to MP3's precision).
      const response = await fetch(done.stems.vocals);
      const file = join(work, 'api-vocals.mp3');
      (await import('node:fs')).writeFileSync(file, Buffer.from(await response.arrayBuffer()));
      const vocals = decodePlanar(file, 2);
      const expected = reference('avg_wave', partsOf([singles[0] as Stems, singles[2] as Stems], 'vocals'), [1, 1]);
      assert.equal(vocals.length, expected.length);
      const snr = snrDb(expected, vocals);
      assert.ok(snr >= 15, `API vocals against the average of the members' vocals: ${snr.toFixed(1)} dB`);
      const models = (await t.request('GET', '/models')).json.data.items as Array<{ name: string; aliases: string[]; terms: string }>;
      for (const name of ['bundled-4s', 'bs-roformer-viperx-1297'])
        assert.ok(models.find((m) => m.name === name)?.aliases.includes('4s'), `${name} is listed under 4s`);
      const page = await (await fetch(`${t.server.url}/web/app.js`)).text();
      assert.match(page, /Made with an ensemble of/, 'the page names every member and its terms');
    } finally {
      await t.close();
    }
  });
});
