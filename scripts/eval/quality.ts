/**
 * Separation quality of the shipped models: Music Demixing Challenge SDR per stem and track,
 *   SDR = 10·log10((Σ s² + 1e-7) / (Σ (s − ŝ)² + 1e-7)),
 * on the real clips in ../shared/eval/real and on the held-out rendered songs. Every model runs
 * through the project's own pipeline (loadManifestModel + separate, ffmpeg decoding).
 *
 *   node --import tsx scripts/eval/quality.ts [--models bundled-4s,stemsplit-small-4s,stemsplit-small-6s]
 *        [--real ../shared/eval/real] [--rendered scripts/train/data/valid2,scripts/train/data/valid3,scripts/train/data/valid4lead]
 *        [--run scripts/train/runs/small4]   (a run's held-out curve from its log.jsonl)
 *        [--ablation scripts/train/runs/small3,scripts/train/runs/small3n]   (two runs compared at equal steps)
 *        [--precision fp32,int8] [--threads 2] [--write docs/quality.md]
 *
 * `--precision` runs each model at each precision given (`int8`: `--precision int8` of split and serve,
 * src/onnx/quantize-graph.ts), one column each; with fp32 and int8 together it also gives the SNR of the
 * int8 stems against the fp32 ones, per stem (issue 24: does int8 cost anything on real music?).
 *
 * `--run` and `--ablation` are for the lab notebook (docs/lab/quality-history.md): docs/quality.md shows the
 * shipped models only, so neither is on by default.
 *
 * A model is a folder under models/ or `label=folder` for one elsewhere (a candidate exported to /tmp, say:
 * `--models stemsplit-small-4s,small4=/tmp/candidate/stemsplit-small-4s`).
 *
 * Inputs are Σ stems (the shipped mixtures of the MUSDB clips are mastered or lossy, see SOURCES.md).
 * MIR-1K (16 kHz mono) is resampled to 44.1 kHz and copied to both channels for the model, and the
 * estimates are brought back to 16 kHz mono for scoring. Held-out rendered songs come from
 * `scripts/train/render.py --first 1000000` (seeds never used for training). Nothing here trains or tunes.
 */
import { mkdtemp, open, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { decodeToPlanar, writeWavTo } from '../../src/audio/index.js';
import { loadManifestModel } from '../../src/bundled/manifest.js';
import { separate, type SegmentModel } from '../../src/separation/index.js';
import { parsePrecision, type Precision } from '../../src/onnx/quantize.js';
import { energy, projection, sdr } from '../../test/support/eval-metrics.js';

const RATE = 44_100;
const MARK_START = '<!-- quality:generated:start -->';
const MARK_END = '<!-- quality:generated:end -->';
const RENDERED_STEMS = ['vocals', 'drums', 'bass', 'other', 'guitar', 'piano'] as const;
const ACCOMPANIMENT_PARTS = ['drums', 'bass', 'other', 'guitar', 'piano'];

/** A planar stereo signal ([left × length, right × length]). */
interface Stereo {
  readonly data: Float32Array;
  readonly length: number;
}

interface Track {
  readonly set: string;
  readonly name: string;
  /** Reference stems at 44.1 kHz stereo. */
  readonly stems: Map<string, Stereo>;
  /** Scoring rate; MIR-1K is scored at its native 16 kHz mono. */
  readonly scoreRate: number;
  /** Reference stems at the scoring rate (mono for MIR-1K). */
  readonly scoreStems: Map<string, Float32Array>;
}

function sum(signals: readonly Stereo[]): Stereo {
  const first = signals[0];
  if (first === undefined) throw new Error('nothing to sum');
  const data = new Float32Array(first.data.length);
  for (const s of signals) for (let i = 0; i < data.length; i++) data[i] = (data[i] ?? 0) + (s.data[i] ?? 0);
  return { data, length: first.length };
}

/** Same length for all stems of a track (decoders can differ by a few samples). */
function cropped(s: Stereo, length: number): Stereo {
  const data = new Float32Array(2 * length);
  data.set(s.data.subarray(0, length));
  data.set(s.data.subarray(s.length, s.length + length), length);
  return { data, length };
}

async function loadRealTrack(root: string, set: string, name: string): Promise<Track> {
  const folder = path.join(root, set, name);
  const files = (await readdir(folder)).filter((f) => f.endsWith('.flac') && f !== 'mixture.flac');
  const decoded = new Map<string, Stereo>();
  for (const f of files) decoded.set(f.replace('.flac', ''), await decodeToPlanar(path.join(folder, f), { sampleRate: RATE }));
  const length = Math.min(...[...decoded.values()].map((s) => s.length));
  const stems = new Map([...decoded].map(([k, s]) => [k, cropped(s, length)] as const));
  const mono = set === 'mir-1k';
  const scoreRate = mono ? 16_000 : RATE;
  const scoreStems = new Map<string, Float32Array>();
  for (const [key, stem] of stems) {
    scoreStems.set(key, mono ? leftOf(await decodeToPlanar(path.join(folder, `${key}.flac`), { sampleRate: scoreRate })) : stem.data);
  }
  return { set, name, stems, scoreRate, scoreStems };
}

function leftOf(s: Stereo): Float32Array {
  return s.data.slice(0, s.length);
}

/** Reads a float16 .npy [6, 2, samples] written by scripts/train/render.py. */
async function loadRenderedSong(file: string): Promise<Track> {
  const bytes = await readFile(file);
  const headerLength = bytes.readUInt16LE(8);
  const header = bytes.subarray(10, 10 + headerLength).toString('latin1');
  const shape = /'shape': \((\d+), (\d+), (\d+)\)/.exec(header);
  if (!header.includes("'<f2'") || shape === null) throw new Error(`${file}: expected float16 [6, 2, n], got ${header}`);
  const length = Number(shape[3]);
  const half = new Uint16Array(bytes.buffer.slice(bytes.byteOffset + 10 + headerLength));
  const stems = new Map<string, Stereo>();
  RENDERED_STEMS.forEach((name, s) => {
    const data = new Float32Array(2 * length);
    for (let i = 0; i < data.length; i++) data[i] = halfToFloat(half[s * 2 * length + i] ?? 0);
    stems.set(name, { data, length });
  });
  // The folder in the name (valid2/song…, valid3/song…) lets each held-out set be averaged on its own.
  const name = `${path.basename(path.dirname(file))}/${path.basename(file, '.npy')}`;
  return { set: 'rendered', name, stems, scoreRate: RATE, scoreStems: new Map([...stems].map(([k, v]) => [k, v.data])) };
}

function halfToFloat(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

function addAll(signals: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(signals[0]?.length ?? 0);
  for (const s of signals) for (let i = 0; i < out.length; i++) out[i] = (out[i] ?? 0) + (s[i] ?? 0);
  return out;
}

/** Stem groups of the six rendered stems / six model outputs that make up a scored stem. */
function partsOf(stem: string, sixStems: boolean): string[] {
  if (stem === 'accompaniment') return ACCOMPANIMENT_PARTS;
  if (stem === 'other' && !sixStems) return ['other', 'guitar', 'piano'];
  return [stem];
}

/**
 * Reference stems at the scoring rate. Real clips: what the folder has, plus accompaniment.
 * Rendered songs: the model's own stems (`sixStems`), or the 4-stem fold (other + guitar + piano).
 */
function references(track: Track, sixStems: boolean): Map<string, Float32Array> {
  const refs = new Map<string, Float32Array>();
  const names =
    track.set === 'rendered'
      ? sixStems
        ? [...RENDERED_STEMS]
        : ['vocals', 'drums', 'bass', 'other']
      : [...new Set([...track.scoreStems.keys(), 'accompaniment'])];
  for (const name of names) {
    const direct = track.scoreStems.get(name);
    const parts = partsOf(name, sixStems)
      .map((p) => track.scoreStems.get(p))
      .filter((p): p is Float32Array => p !== undefined);
    refs.set(name, track.set !== 'rendered' && direct !== undefined ? direct : addAll(parts));
  }
  return refs;
}

/** The model's outputs under the reference names (6-stem outputs fold into 4 unless scored as six). */
function estimates(
  sources: readonly string[],
  outputs: readonly Float32Array[],
  length: number,
  names: Iterable<string>,
  sixStems: boolean,
): Map<string, Stereo> {
  const byName = new Map(sources.map((name, i) => [name, outputs[i] ?? new Float32Array(2 * length)] as const));
  const result = new Map<string, Stereo>();
  for (const name of names) {
    const parts = partsOf(name, sixStems)
      .map((p) => byName.get(p))
      .filter((p): p is Float32Array => p !== undefined);
    if (parts.length > 0) result.set(name, { data: addAll(parts), length });
  }
  return result;
}

/** Planar stereo at 44.1 kHz → mono at `rate`, through a float WAV and ffmpeg (the project's decoder). */
async function toMonoAt(signal: Stereo, rate: number, scratch: string): Promise<Float32Array> {
  const file = path.join(scratch, 'estimate.wav');
  const handle = await open(file, 'w');
  try {
    await writeWavTo(handle, signal.data, signal.length, RATE, 'float32');
  } finally {
    await handle.close();
  }
  const decoded = await decodeToPlanar(file, { sampleRate: rate });
  const mono = new Float32Array(decoded.length);
  for (let i = 0; i < decoded.length; i++) mono[i] = 0.5 * ((decoded.data[i] ?? 0) + (decoded.data[decoded.length + i] ?? 0));
  return mono;
}

const LEAK_STEMS = ['vocals', 'drums', 'bass', 'other'] as const;

interface Leak {
  readonly track: string;
  readonly stem: string;
  readonly coefficients: number[];
  readonly unexplained: number;
}

interface Score {
  readonly set: string;
  readonly track: string;
  readonly stem: string;
  readonly sdr: number;
}

/** A rendered song without vocals: the energy of the vocal estimate and of the mixture (for leakage in dB). */
interface Silence {
  readonly track: string;
  readonly vocals: number;
  readonly mix: number;
}

/** The fp32 stems of a model per track, kept so its int8 run can be set against them. */
type Outputs = Map<string, readonly Float32Array[]>;

async function scoreModel(
  model: SegmentModel,
  tracks: readonly Track[],
  scratch: string,
  baseline: { keep?: Outputs; against?: Outputs } = {},
): Promise<Omit<ModelResult, 'name'>> {
  const scores: Score[] = [];
  const agreement: Score[] = [];
  const leaks: Leak[] = [];
  const silences: Silence[] = [];
  let audioSeconds = 0;
  let separateSeconds = 0;
  for (const track of tracks) {
    const mix = sum([...track.stems.values()]);
    const start = performance.now();
    const outputs = await separate(model, mix);
    separateSeconds += (performance.now() - start) / 1000;
    audioSeconds += mix.length / RATE;
    const key = `${track.set}/${track.name}`;
    baseline.keep?.set(key, outputs);
    const reference = baseline.against?.get(key);
    if (reference !== undefined) {
      model.sources.forEach((stem, s) =>
        agreement.push({ set: track.set, track: track.name, stem, sdr: snr(reference[s] as Float32Array, outputs[s] as Float32Array) }),
      );
    }
    const sixStems = track.set === 'rendered' && model.sources.includes('guitar');
    const refs = references(track, sixStems);
    const ests = estimates(model.sources, outputs, mix.length, refs.keys(), sixStems);
    if (track.set === 'musdb18-7s') {
      const stemRefs = LEAK_STEMS.map((s) => refs.get(s) ?? new Float32Array());
      for (const stem of LEAK_STEMS) {
        const estimate = ests.get(stem);
        if (estimate !== undefined) leaks.push({ track: track.name, stem, ...projection(estimate.data, stemRefs) });
      }
    }
    const vocalsRef = refs.get('vocals');
    if (track.set === 'rendered' && vocalsRef !== undefined && energy(vocalsRef) <= 1e-4 * energy(mix.data)) {
      silences.push({ track: track.name, vocals: energy(ests.get('vocals')?.data ?? new Float32Array()), mix: energy(mix.data) });
    }
    for (const [stem, estimate] of ests) {
      const reference = refs.get(stem) ?? new Float32Array();
      // A rendered song may lack a stem; the SDR of silence only measures leakage, so it is not averaged.
      if (track.set === 'rendered' && energy(reference) <= 1e-4 * energy(mix.data)) continue;
      const scored = track.scoreRate === RATE ? estimate.data : await toMonoAt(estimate, track.scoreRate, scratch);
      scores.push({ set: track.set, track: track.name, stem, sdr: sdr(reference, scored) });
    }
  }
  return { scores, leaks, silences, agreement, realtime: audioSeconds / separateSeconds };
}

/** SNR in dB of `estimate` against `reference` (int8 stems against fp32 ones). */
function snr(reference: Float32Array, estimate: Float32Array): number {
  return 10 * Math.log10(energy(reference) / Math.max(energy(reference.map((r, i) => r - (estimate[i] ?? 0))), 1e-30));
}

interface ModelResult {
  readonly name: string;
  readonly scores: Score[];
  readonly leaks: Leak[];
  readonly silences: Silence[];
  /** Per track and model stem, the SNR (dB, in `sdr`) of these stems against the same model's fp32 stems (int8 runs). */
  readonly agreement: Score[];
  readonly realtime: number;
}

/** Vocal-estimate energy relative to the mixture in dB, pooled over a folder's songs without vocals. */
function leakageOfFolder(result: ModelResult, folder: string): number | undefined {
  const rows = result.silences.filter((s) => s.track.startsWith(`${folder}/`));
  if (rows.length === 0) return undefined;
  return 10 * Math.log10((rows.reduce((a, r) => a + r.vocals, 0) + 1e-12) / (rows.reduce((a, r) => a + r.mix, 0) + 1e-12));
}

interface CurvePoint {
  readonly step: number;
  readonly time: number;
  readonly songs: number;
  /** Held-out crops scored: 24 (generation 1) until the generation-2 songs joined, then 36. */
  readonly crops?: number;
  readonly sdr4: Record<string, number>;
  readonly sdr6: Record<string, number>;
  /** Per held-out folder, the 4-stem fold (runs from small3 on). */
  readonly sets4?: Record<string, Record<string, number>>;
  /** Per held-out folder, vocal-estimate energy re the mixture on its crops without vocals (runs from small4 on). */
  readonly leak_db?: Record<string, number>;
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / Math.max(1, values.length);
}

const fmt = (v: number | undefined): string => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(2));

/** The mean over the rendered songs of one held-out folder (valid2, valid3, …). */
function averageOfFolder(result: ModelResult, folder: string, stem: string): number | undefined {
  const values = result.scores.filter((s) => s.set === 'rendered' && s.track.startsWith(`${folder}/`) && s.stem === stem).map((s) => s.sdr);
  return values.length === 0 ? undefined : mean(values);
}

function averageOf(result: ModelResult, sets: readonly string[], stem: string): number | undefined {
  const values = result.scores.filter((s) => sets.includes(s.set) && s.stem === stem).map((s) => s.sdr);
  return values.length === 0 ? undefined : mean(values);
}

/** What each held-out folder holds (scripts/train/README.md). */
const FOLDER_NOTES: Readonly<Record<string, string>> = {
  valid: ' (generation 1)',
  valid2: ' (generation 2: synthetic full-band singers)',
  valid3: ' (generation 3, sung and spoken by a speaker training never heard)',
  valid4lead: ' (generation 4 instrumentals: voice-like leads on instruments training never heard, no vocals)',
};

function markdown(
  results: readonly ModelResult[],
  tracks: readonly Track[],
  curve: readonly CurvePoint[],
  threads: number,
  ablation: Ablation | undefined,
): string {
  const names = results.map((r) => `\`${r.name}\``);
  const header = (first: string): string[] => [`| ${first} | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`];
  const lines: string[] = [MARK_START, '', '_Generated by `scripts/eval/quality.ts`; SDR in dB, higher is better._', ''];

  lines.push('### Targets on the real clips (averages)', '', ...header('clips · stem'));
  const targets: [string, readonly string[], string][] = [
    ['4-stem clips (musdb18-7s) · vocals', ['musdb18-7s'], 'vocals'],
    ['4-stem clips (musdb18-7s) · drums', ['musdb18-7s'], 'drums'],
    ['4-stem clips (musdb18-7s) · bass', ['musdb18-7s'], 'bass'],
    ['4-stem clips (musdb18-7s) · other', ['musdb18-7s'], 'other'],
    ['30-s clips · vocals', ['musdb18-test-30s-wave-u-net'], 'vocals'],
    ['30-s clips · accompaniment', ['musdb18-test-30s-wave-u-net'], 'accompaniment'],
    ['MIR-1K (16 kHz mono) · vocals', ['mir-1k'], 'vocals'],
    ['MIR-1K (16 kHz mono) · accompaniment', ['mir-1k'], 'accompaniment'],
  ];
  for (const [label, sets, stem] of targets) lines.push(`| ${label} | ${results.map((r) => fmt(averageOf(r, sets, stem))).join(' | ')} |`);

  lines.push('', '### Held-out rendered songs (averages)', '', ...header('stem'));
  for (const stem of [...RENDERED_STEMS, 'accompaniment']) {
    if (results.every((r) => averageOf(r, ['rendered'], stem) === undefined)) continue;
    lines.push(`| ${stem} | ${results.map((r) => fmt(averageOf(r, ['rendered'], stem))).join(' | ')} |`);
  }
  const rendered = tracks.filter((t) => t.set === 'rendered').length;
  lines.push(
    '',
    `${rendered} songs of 12 s; 4-stem models are scored on the 4-stem fold (other = other + guitar + piano), 6-stem models on all six stems. A stem a song lacks (quieter than -40 dB re the mix) is left out of its average.`,
  );
  const folders = [...new Set(tracks.filter((t) => t.set === 'rendered').map((t) => t.name.split('/')[0] as string))].sort();
  if (folders.length > 1) {
    lines.push('', '#### Per held-out set', '', `| set · stem | ${names.join(' | ')} |`, `|---|${names.map(() => '---:').join('|')}|`);
    for (const folder of folders) {
      for (const stem of ['vocals', 'drums', 'bass', 'other']) {
        lines.push(`| ${folder}${FOLDER_NOTES[folder] ?? ''} · ${stem} | ${results.map((r) => fmt(averageOfFolder(r, folder, stem))).join(' | ')} |`);
      }
    }
  }

  const silentFolders = folders.filter((folder) => results.some((r) => leakageOfFolder(r, folder) !== undefined));
  if (silentFolders.length > 0) {
    lines.push(
      '',
      '#### Vocals where nobody sings',
      '',
      "Energy of the vocal estimate relative to the mixture (dB, pooled over each set's songs without vocals; lower is",
      'better, target ≤ -20 dB). `valid4lead` is 12 instrumentals whose leads are bowed strings, flutes, reeds, brass and',
      'a synthesised lead that training never heard (`render.py --leads held-out --instrumental`).',
      '',
      `| set | songs | ${names.join(' | ')} |`,
      `|---|---:|${names.map(() => '---:').join('|')}|`,
    );
    for (const folder of silentFolders) {
      const songs = Math.max(...results.map((r) => r.silences.filter((s) => s.track.startsWith(`${folder}/`)).length));
      lines.push(`| ${folder} | ${songs} | ${results.map((r) => fmt(leakageOfFolder(r, folder))).join(' | ')} |`);
    }
  }

  lines.push(
    '',
    '### Where each real stem went (4-stem clips)',
    '',
    'Least-squares fit of each estimate on the four reference stems, estimate ≈ Σ c · reference, averaged over the',
    'musdb18-7s clips: a column shows how much of that reference stem (in amplitude) each estimate holds, so a perfect',
    'separation reads 1 on the diagonal and 0 elsewhere. "unexplained" is the share of the estimate\'s energy that no',
    'reference accounts for (artefacts and distortion).',
    '',
  );
  for (const result of results) {
    if (result.leaks.length === 0) continue;
    lines.push(
      `\`${result.name}\``,
      '',
      `| estimate | ${LEAK_STEMS.map((s) => `c · ${s}`).join(' | ')} | unexplained |`,
      `|---|${LEAK_STEMS.map(() => '---:').join('|')}|---:|`,
    );
    for (const stem of LEAK_STEMS) {
      const rows = result.leaks.filter((l) => l.stem === stem);
      const cells = LEAK_STEMS.map((_, j) => fmt(mean(rows.map((r) => r.coefficients[j] ?? 0))));
      lines.push(`| ${stem} | ${cells.join(' | ')} | ${fmt(mean(rows.map((r) => r.unexplained)))} |`);
    }
    lines.push('');
  }

  lines.push('### Every real clip', '', ...header('clip · stem'));
  for (const track of tracks.filter((t) => t.set !== 'rendered')) {
    const stems = [...new Set(results.flatMap((r) => r.scores.filter((s) => s.track === track.name).map((s) => s.stem)))].sort();
    for (const stem of stems) {
      const cells = results.map((r) => fmt(r.scores.find((s) => s.track === track.name && s.stem === stem)?.sdr));
      lines.push(`| ${track.set}/${track.name} · ${stem} | ${cells.join(' | ')} |`);
    }
  }

  const compared = results.filter((r) => r.agreement.length > 0);
  if (compared.length > 0) {
    lines.push(
      '',
      '### int8 stems against fp32 stems',
      '',
      "SNR (dB) of each model's int8 stems against its own fp32 stems on the real clips: the lowest clip, and the",
      'median clip (the input of both is the same mix, so this is what int8 changes, not separation quality).',
      '',
      '| model · stem | lowest clip | median clip |',
      '|---|---:|---:|',
    );
    for (const result of compared) {
      for (const stem of [...new Set(result.agreement.map((a) => a.stem))]) {
        const values = result.agreement
          .filter((a) => a.stem === stem && a.set !== 'rendered')
          .map((a) => a.sdr)
          .sort((a, b) => a - b);
        if (values.length > 0) lines.push(`| \`${result.name}\` · ${stem} | ${fmt(values[0])} | ${fmt(values[Math.floor(values.length / 2)])} |`);
      }
    }
  }

  lines.push('', '### Speed', '', ...header('measure'));
  lines.push(
    `| × realtime of \`separate()\` over all clips (${threads} ORT threads, overlap 0.25, shared machine) | ${results.map((r) => r.realtime.toFixed(1)).join(' | ')} |`,
  );

  if (curve.length > 0) {
    lines.push(
      '',
      '### Held-out rendered SDR over training',
      '',
      '| step | min since (re)start | songs | held-out crops | vocals | drums | bass | other (4-stem fold) | mean of 6 stems | vocals, unheard speaker (valid3) | valid4lead: vocal leak (dB) | valid4lead: other |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    );
    const every = Math.max(1, Math.ceil(curve.length / 30));
    const crops = (p: CurvePoint | undefined): number => p?.crops ?? 24;
    // Keep every point where the held-out set changed, so both sides of the switch show.
    const switches = (p: CurvePoint, i: number): boolean => i > 0 && (crops(curve[i - 1]) !== crops(p) || crops(curve[i + 1]) !== crops(p));
    curve
      .filter((p, i) => i % every === 0 || i === curve.length - 1 || switches(p, i))
      .forEach((p) => {
        lines.push(
          `| ${p.step} | ${(p.time / 60).toFixed(0)} | ${p.songs} | ${crops(p)} | ${fmt(p.sdr4['vocals'])} | ${fmt(p.sdr4['drums'])} | ${fmt(p.sdr4['bass'])} | ${fmt(p.sdr4['other'])} | ${fmt(mean(Object.values(p.sdr6)))} | ${fmt(p.sets4?.['valid3']?.['vocals'])} | ${fmt(p.leak_db?.['valid4lead'])} | ${fmt(p.sets4?.['valid4lead']?.['other'])} |`,
        );
      });
    lines.push(
      '',
      "From the run's `log.jsonl`: fixed 6-s crops of the held-out songs, one per song, measured during training (PyTorch, same network; a stem absent from a crop is left out of its mean): the 12 generation-2 songs (`data/valid2`), the 12 generation-3 songs of the held-out speaker (`data/valid3`) and, from run small4 on, the 12 instrumentals with held-out leads (`data/valid4lead`). The curve restarts at step 0 when a run starts from another run's weights.",
    );
  }
  if (ablation !== undefined) {
    lines.push(
      '',
      '### Band extension of the 16 kHz voices: held-out scores at equal steps',
      '',
      `Two runs from the same seed and random weights on the same songs; \`${ablation.with}\` gives a band-limited vocal stem a synthesised 8-16 kHz band half the time (\`--band-extend 0.5\`), \`${ablation.without}\` never. 4-stem fold, from each run's \`log.jsonl\`.`,
      '',
      '| step | valid3 vocals, with | without | valid2 vocals, with | without | mean of 6, with | without |',
      '|---:|---:|---:|---:|---:|---:|---:|',
    );
    for (const p of ablation.points) {
      lines.push(
        `| ${p.step} | ${fmt(p.with.sets4?.['valid3']?.['vocals'])} | ${fmt(p.without.sets4?.['valid3']?.['vocals'])} | ${fmt(p.with.sets4?.['valid2']?.['vocals'])} | ${fmt(p.without.sets4?.['valid2']?.['vocals'])} | ${fmt(mean(Object.values(p.with.sdr6)))} | ${fmt(mean(Object.values(p.without.sdr6)))} |`,
      );
    }
  }
  lines.push('', MARK_END);
  return lines.join('\n');
}

interface Ablation {
  readonly with: string;
  readonly without: string;
  readonly points: readonly { step: number; with: CurvePoint; without: CurvePoint }[];
}

/** `--ablation with,without`: two runs' curves at equal steps (none when the option is empty). */
async function ablationOf(option: string): Promise<Ablation | undefined> {
  const [withRun, withoutRun] = option.split(',');
  if (withRun === undefined || withoutRun === undefined || withRun === '' || withoutRun === '') return undefined;
  return readAblation(withRun, withoutRun);
}

/** The steps both runs scored, side by side. */
async function readAblation(withRun: string, withoutRun: string): Promise<Ablation | undefined> {
  const [a, b] = await Promise.all([readCurve(withRun), readCurve(withoutRun)]);
  const points = a.flatMap((p) => {
    const other = b.find((q) => q.step === p.step);
    return other === undefined ? [] : [{ step: p.step, with: p, without: other }];
  });
  return points.length === 0 ? undefined : { with: path.basename(withRun), without: path.basename(withoutRun), points };
}

async function readCurve(runDir: string): Promise<CurvePoint[]> {
  if (runDir === '') return [];
  const file = path.join(runDir, 'log.jsonl');
  if (!existsSync(file)) return [];
  return (await readFile(file, 'utf8'))
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as CurvePoint);
}

async function realTracks(root: string): Promise<Track[]> {
  const tracks: Track[] = [];
  for (const set of ['musdb18-7s', 'musdb18-test-30s-wave-u-net', 'mir-1k']) {
    for (const name of (await readdir(path.join(root, set))).sort()) tracks.push(await loadRealTrack(root, set, name));
  }
  return tracks;
}

async function renderedSets(folders: readonly string[]): Promise<Track[]> {
  return (await Promise.all(folders.map(renderedTracks))).flat();
}

async function renderedTracks(folder: string): Promise<Track[]> {
  if (!existsSync(folder)) return [];
  const files = (await readdir(folder)).filter((f) => /^song\d+\.npy$/.test(f)).sort();
  return Promise.all(files.map((f) => loadRenderedSong(path.join(folder, f))));
}

async function writeSection(file: string, section: string): Promise<void> {
  const current = existsSync(file) ? await readFile(file, 'utf8') : `# Separation quality\n\n${MARK_START}\n${MARK_END}\n`;
  const start = current.indexOf(MARK_START);
  const end = current.indexOf(MARK_END);
  const next = start >= 0 && end > start ? current.slice(0, start) + section + current.slice(end + MARK_END.length) : `${current.trimEnd()}\n\n${section}\n`;
  await writeFile(file, next);
}

async function scoreAt(
  manifest: string,
  label: string,
  precision: Precision,
  threads: number,
  tracks: readonly Track[],
  scratch: string,
  baseline: { keep?: Outputs; against?: Outputs },
): Promise<ModelResult> {
  const model = await loadManifestModel(manifest, { intraOpThreads: threads, precision });
  try {
    const result = { name: label, ...(await scoreModel(model, tracks, scratch, baseline)) };
    console.error(`${label}: ${result.scores.length} scores, ${result.realtime.toFixed(1)}x realtime`);
    return result;
  } finally {
    await model.dispose();
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      models: { type: 'string', default: 'bundled-4s,stemsplit-small-4s,stemsplit-small-6s' },
      real: { type: 'string', default: '../shared/eval/real' },
      rendered: { type: 'string', default: 'scripts/train/data/valid2,scripts/train/data/valid3,scripts/train/data/valid4lead' },
      run: { type: 'string', default: '' },
      ablation: { type: 'string', default: '' },
      threads: { type: 'string', default: '2' },
      precision: { type: 'string', default: 'fp32' },
      write: { type: 'string' },
    },
  });
  const threads = Number(values.threads);
  // fp32 first, so the int8 run has its stems to be set against.
  const precisions = [...new Set(values.precision.split(',').map((p) => parsePrecision(p)))].sort();
  const tracks = [...(await realTracks(values.real)), ...(await renderedSets(values.rendered.split(',')))];
  const scratch = await mkdtemp(path.join(tmpdir(), 'stemsplit-quality-'));
  const results: ModelResult[] = [];
  try {
    for (const spec of values.models.split(',').filter((n) => n !== '')) {
      const [name, folder] = spec.includes('=') ? (spec.split('=', 2) as [string, string]) : [spec, path.join('models', spec)];
      const manifest = path.join(folder, 'model.json');
      if (!existsSync(manifest)) {
        console.error(`skipping ${name}: ${manifest} not found`);
        continue;
      }
      let fp32Outputs: Outputs | undefined;
      for (const precision of precisions) {
        const label = precisions.length > 1 || precision !== 'fp32' ? `${name} ${precision}` : name;
        const baseline = precision === 'fp32' ? { keep: (fp32Outputs = new Map()) } : fp32Outputs === undefined ? {} : { against: fp32Outputs };
        results.push(await scoreAt(manifest, label, precision, threads, tracks, scratch, baseline));
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  const section = markdown(results, tracks, await readCurve(values.run), threads, await ablationOf(values.ablation));
  console.log(section);
  if (values.write !== undefined) await writeSection(values.write, section);
}

await main();
