/**
 * The shared reference fixtures (../shared/fixtures) as splits a user makes: the model's files as a
 * user keeps them, the fixture's input as a 32-bit float WAV, the stems the split writes and the
 * `split` flags the fixture was made with. test/fixtures-through-split.test.ts checks the stems
 * against the official code's output; test/gpu.test.ts checks `--device gpu` against `--device cpu`.
 */
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { flagAttribute, flagName } from '../../src/contract/family.js';
import { MDX_DEFAULTS, MDX_OPTION_TABLE, type MdxOptions } from '../../src/mdx/options.js';
import { parseBagFile } from '../../src/demucs/bag-file.js';
import { VR_DEFAULTS, type VrOptions } from '../../src/vr/options.js';
import { fixtureDir, fixtureManifest } from './fixtures.js';
import { msstFixtures } from './msst-fixtures.js';
import { readF32, writeFloatWav } from './reference-audio.js';

export interface FixtureCase {
  /** `family/fixture`. */
  readonly name: string;
  /** The files a user has: the model file first, then what must sit beside it. */
  readonly files: readonly string[];
  /** Text files written beside the model (name → content): a VR model's data. */
  readonly written?: Readonly<Record<string, string>>;
  /** The name the model file has beside its data (a VR model's NAME.pth), when not its fixture name. */
  readonly modelName?: string;
  /** Planar float32 [channels, N]. */
  readonly input: string;
  readonly channels: number;
  /** The official output [stems, channels, N / stride]; absent where only a comparison between devices is made. */
  readonly reference?: string;
  readonly stems: readonly string[];
  /** The reference keeps every `stride`-th sample. */
  readonly stride: number;
  readonly minSnrDb: number;
  /** Settings the fixture was made with, as `split` flags. */
  readonly cliArgs?: readonly string[];
  /** The same settings as the API's `modelOptions`. */
  readonly modelOptions?: Readonly<Record<string, number | boolean>>;
}

/** RoFormer, SCNet and MDX23C fixtures share MSST's manifest layout. */
export function msstCases(family: string): FixtureCase[] {
  const dir = fixtureDir(family);
  return msstFixtures(dir).flatMap(([name, fixture]) => {
    const input = fixture.files['demix_in'];
    const output = fixture.files['demix_out'];
    if (!input || !output) return [];
    return [
      {
        name: `${family}/${name}`,
        files: [join(dir as string, fixture.checkpoint.file), join(dir as string, fixture.config.file)],
        input: join(dir as string, input.file),
        channels: input.shape[0] as number,
        reference: join(dir as string, output.file),
        // stemsplit lower-cases the yaml's names (`Vocals` → vocals.wav).
        stems: fixture.instruments_out.map((stem) => stem.toLowerCase()),
        stride: 1,
        minSnrDb: 60,
      },
    ];
  });
}

interface DemucsFixture {
  readonly checkpoint?: string;
  readonly bag?: string;
  readonly members?: string[];
  readonly sources: string[];
  readonly separate_in?: [string, number[]];
  readonly separate_out?: [string, number[]];
}

/** Demucs v4 (HTDemucs): single models and a bag (a yaml with its members). */
export function demucsCases(): FixtureCase[] {
  const dir = fixtureDir('demucs');
  // Demucs' outputs keep every `output_stride`-th sample, a top-level field of its manifest.
  const stride = dir ? ((JSON.parse(readFileSync(join(dir, 'fixtures.json'), 'utf8')) as { output_stride?: number }).output_stride ?? 1) : 1;
  return fixtureManifest<DemucsFixture>(dir).flatMap(([name, fixture]) => {
    if (!fixture.separate_in || !fixture.separate_out) return [];
    const model = fixture.checkpoint ?? fixture.bag;
    if (!model) return [];
    return [
      {
        name: `demucs/${name}`,
        files: [model, ...(fixture.members ?? [])].map((file) => join(dir as string, file)),
        input: join(dir as string, fixture.separate_in[0]),
        channels: 2,
        reference: join(dir as string, fixture.separate_out[0]),
        stems: fixture.sources,
        stride,
        minSnrDb: 60,
      },
    ];
  });
}

interface DemucsV3Fixture {
  readonly sources: string[];
}

/**
 * Demucs v3 and v2 bags (../shared/fixtures/demucs-v3): `hdemucs_mmi_small` (one HDemucs) and
 * `mdx_small` (two time-domain Demucs, one of them diffq-quantized, and two HDemucs).
 */
export function demucsV3Cases(): FixtureCase[] {
  const dir = fixtureDir('demucs-v3');
  if (dir === undefined) return [];
  const { output_stride: stride } = JSON.parse(readFileSync(join(dir, 'fixtures.json'), 'utf8')) as { output_stride: number };
  const fixtures = new Map(fixtureManifest<DemucsV3Fixture>(dir));
  return ['hdemucs_mmi_small', 'mdx_small'].map((bag) => {
    const members = parseBagFile(readFileSync(join(dir, `${bag}.yaml`), 'utf8')).models;
    return {
      name: `demucs-v3/${bag}`,
      files: [join(dir, `${bag}.yaml`), ...members.map((member) => join(dir, `${member}.th`))],
      input: join(dir, 'mix.in.f32'),
      channels: 2,
      reference: join(dir, `${bag}.separate.out.f32`),
      stems: (fixtures.get(members[0] as string) as DemucsV3Fixture).sources,
      stride,
      minSnrDb: 60,
    };
  });
}

/** MDX-Net fixtures: the .onnx with its model data beside it, python-audio-separator's stems (named as stemsplit names them). */
interface MdxFixture {
  readonly files: {
    model: { path: string };
    model_data?: { path: string };
    input: { path: string; shape: number[] };
    output: { path: string; stems: string[] };
  };
  readonly arch_config: { segment_size: number; overlap: number; batch_size: number; hop_length: number; enable_denoise: boolean };
}

/** python-audio-separator's arch_config keys, each with the MdxOptions field stemsplit takes it by (its row of MDX_OPTION_TABLE). */
const MDX_SETTINGS: readonly (readonly [key: keyof MdxFixture['arch_config'], option: keyof MdxOptions])[] = [
  ['segment_size', 'segmentSize'],
  ['overlap', 'overlap'],
  ['batch_size', 'batchSize'],
  ['hop_length', 'hopLength'],
  ['enable_denoise', 'denoise'],
];

/** The fixture's settings that differ from the defaults, as the flag declaration of their table row and their value. */
function mdxSettingsOf(arch: MdxFixture['arch_config']): (readonly [flags: string, value: number | boolean])[] {
  return MDX_SETTINGS.flatMap(([key, option]) => {
    const row = MDX_OPTION_TABLE.find((candidate) => candidate.key === option);
    if (row === undefined) throw new Error(`MDX_OPTION_TABLE has no row for ${option}`);
    return arch[key] === MDX_DEFAULTS[option] ? [] : [[row.flags, arch[key]] as const];
  });
}

export function mdxCases(): FixtureCase[] {
  const dir = fixtureDir('mdx');
  return fixtureManifest<MdxFixture>(dir).flatMap(([name, fixture]) => {
    const { files, arch_config: arch } = fixture;
    const settings = mdxSettingsOf(arch);
    return [
      {
        name: `mdx/${name}`,
        files: [join(dir as string, files.model.path), ...(files.model_data ? [join(dir as string, files.model_data.path)] : [])],
        input: join(dir as string, files.input.path),
        channels: files.input.shape[0] as number,
        reference: join(dir as string, files.output.path),
        stems: files.output.stems.map((stem) => stem.toLowerCase().replace(/\s+/g, '_')),
        stride: 1,
        minSnrDb: 90,
        cliArgs: settings.flatMap(([flags, value]) => (typeof value === 'boolean' ? (value ? [flagName(flags)] : []) : [flagName(flags), String(value)])),
        modelOptions: Object.fromEntries(settings.map(([flags, value]) => [flagAttribute(flags), value])),
      },
    ];
  });
}

interface VrFixture {
  readonly files: {
    readonly model: { readonly path: string };
    readonly input: { readonly path: string; readonly shape: readonly [number, number] };
    readonly output: { readonly stems: readonly string[] };
  };
  readonly model_data: Record<string, unknown>;
  readonly options: Record<string, number | boolean>;
}

/** python-audio-separator's vr_params keys, each as the option, the flag and the API's modelOptions name stemsplit takes it by. */
export const VR_SETTINGS: readonly (readonly [key: string, option: keyof VrOptions, flag: string, apiName: string])[] = [
  ['window_size', 'windowSize', '--vr-window-size', 'vrWindowSize'],
  ['aggression', 'aggression', '--vr-aggression', 'vrAggression'],
  ['batch_size', 'batchSize', '--vr-batch-size', 'vrBatchSize'],
  ['enable_tta', 'enableTta', '--vr-enable-tta', 'vrEnableTta'],
  ['enable_post_process', 'enablePostProcess', '--vr-enable-post-process', 'vrEnablePostProcess'],
  ['post_process_threshold', 'postProcessThreshold', '--vr-post-process-threshold', 'vrPostProcessThreshold'],
  ['high_end_process', 'highEndProcess', '--vr-high-end-process', 'vrHighEndProcess'],
];

/**
 * VR fixtures: NAME.pth with its model data as NAME.json beside it (two fixtures share a .pth with
 * other model data), the fixture's settings as flags and as modelOptions. The official stems are
 * shorter than the track (test/vr-through-split.test.ts checks them), so no reference here.
 */
export function vrCases(): FixtureCase[] {
  const dir = fixtureDir('vr');
  return fixtureManifest<VrFixture>(dir).map(([name, fixture]) => {
    const changed = VR_SETTINGS.flatMap(([key, option, flag, apiName]) => {
      const value = fixture.options[key];
      return value === undefined || value === VR_DEFAULTS[option] ? [] : [[flag, apiName, value] as const];
    });
    return {
      name: `vr/${name}`,
      files: [join(dir as string, fixture.files.model.path)],
      modelName: `${name}.pth`,
      written: { [`${name}.json`]: JSON.stringify(fixture.model_data) },
      input: join(dir as string, fixture.files.input.path),
      channels: fixture.files.input.shape[0],
      stems: fixture.files.output.stems.map((stem) => stem.toLowerCase().replace(/\s+/g, '_')),
      stride: 1,
      minSnrDb: 65,
      cliArgs: changed.flatMap(([flag, , value]) => (typeof value === 'boolean' ? (value ? [flag] : []) : [flag, String(value)])),
      modelOptions: Object.fromEntries(changed.map(([, apiName, value]) => [apiName, value])),
    };
  });
}

/** The cases whose references are the official code's whole output (test/fixtures-through-split.test.ts). */
export function referenceCases(): FixtureCase[] {
  return [...demucsCases(), ...msstCases('roformer'), ...msstCases('msst'), ...mdxCases()];
}

/**
 * Copies the model's files into `dir` (as a user keeps them), writes its data files and the
 * fixture's input as a float WAV (its first `seconds` when given).
 */
export function prepareCase(c: FixtureCase, dir: string, seconds?: number): { model: string; song: string } {
  mkdirSync(dir, { recursive: true });
  const [modelFile, ...beside] = c.files as [string, ...string[]];
  const model = join(dir, c.modelName ?? basename(modelFile));
  copyFileSync(modelFile, model);
  for (const file of beside) copyFileSync(file, join(dir, basename(file)));
  for (const [name, text] of Object.entries(c.written ?? {})) writeFileSync(join(dir, name), text);
  const song = join(dir, 'song.wav');
  writeFloatWav(song, seconds === undefined ? readF32(c.input) : headOf(readF32(c.input), c.channels, Math.round(seconds * 44_100)), c.channels);
  return { model, song };
}

/** The first `length` samples of each channel of planar [channels, N] (all of it when shorter). */
function headOf(planar: Float32Array, channels: number, length: number): Float32Array {
  const total = planar.length / channels;
  if (length >= total) return planar;
  const head = new Float32Array(channels * length);
  for (let c = 0; c < channels; c++) head.set(planar.subarray(c * total, c * total + length), c * length);
  return head;
}
