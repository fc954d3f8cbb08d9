/**
 * A checkpoint whose structure is sound but whose weights do not fit its config (issue 37: "a
 * model's weights are not read twice to find out it is bad"): for every family that converts
 * checkpoints, a real fixture with one weight made one row short is refused in one line naming
 * that tensor and the file, with the model-file code, and the refusal reads less than half
 * of the file's bytes (the process's own read count, /proc/self/io `rchar`): the shapes are
 * checked from the pickle before the file is hashed or a weight is read. Loaded as the split
 * worker loads models; one family also through the real CLI (exit 13). Skipped (saying why)
 * where a fixture is missing.
 */
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import { writeSong } from './support/audio.js';
import { writeMisshaped } from './support/hostile/misshaped.js';
import { runCli } from './support/process.js';
import { describeError, isStemsplitError } from '../src/errors.js';
import { modelLoader } from '../src/models/loaders.js';
import { ModelRegistry } from '../src/models/registry.js';
import { loadNamed } from '../src/split-worker/load-refusal.js';
import { checkDemucsCheckpoint } from '../src/demucs/checkpoint.js';
import { checkStateDict, type CheckpointTensor } from '../src/torch/checkpoint.js';
import { fixtureFile } from './support/fixtures.js';
import { tempDir } from './support/server.js';

/** A family's fixture checkpoint and the files that travel beside it (its yaml, its model data). */
interface Case {
  readonly family: string;
  readonly checkpoint: string | undefined;
  readonly beside: readonly string[];
  /**
   * Which matrix-like weight to damage (writeMisshaped): the first, but for VR, which infers its
   * layers' widths from their first convolutions, its output's (the last, `aux_out`, is a training
   * head inference never reads).
   */
  readonly which?: number;
  /** Or which weight to damage by its name: one the graph builder once read without an expected shape. */
  readonly tensor?: string;
}

const HTDEMUCS = fixtureFile('demucs', 'htdemucs_small.th');

const CASES: readonly Case[] = [
  { family: 'Demucs (HTDemucs)', checkpoint: HTDEMUCS, beside: [] },
  // A transposed convolution's first dimension is its inputs: no bias betrays it.
  { family: "Demucs (HTDemucs), a decoder's transposed convolution", checkpoint: HTDEMUCS, beside: [], which: 40 },
  // Weights the builder once read without an expected shape (issue 37), now each against the config's parameter list:
  // a misshaped LayerScale, packed attention projection or frequency embedding was converted and run (or failed unnamed);
  // a weight with a bias or a norm was named only through its bias.
  ...[
    'crosstransformer.layers.0.self_attn.in_proj_weight',
    'crosstransformer.layers.0.linear1.weight',
    'crosstransformer.layers_t.1.norm2.weight',
    'crosstransformer.layers.0.gamma_1.scale',
    'encoder.0.dconv.layers.0.6.scale',
    'channel_upsampler.weight',
    'freq_emb.embedding.weight',
  ].map((tensor) => ({ family: `Demucs (HTDemucs), ${tensor}`, checkpoint: HTDEMUCS, beside: [], tensor })),
  { family: 'Demucs v3 (HDemucs)', checkpoint: fixtureFile('demucs-v3', 'hdemucs_mmi_m0.th'), beside: [] },
  { family: 'Demucs v2 (Demucs)', checkpoint: fixtureFile('demucs-v3', 'mdx_m0.th'), beside: [] },
  { family: 'BS-RoFormer', checkpoint: fixtureFile('roformer', 'bs_roformer_vocals.ckpt'), beside: ['.yaml'] },
  { family: 'SCNet', checkpoint: fixtureFile('msst', 'scnet_2stem.ckpt'), beside: ['.yaml'] },
  { family: 'MDX23C', checkpoint: fixtureFile('msst', 'mdx23c_2stem.ckpt'), beside: ['.yaml'] },
  { family: 'VR', checkpoint: fixtureFile('vr', 'vr_c_v51_4band_v3_noecho_tta.pth'), beside: ['.json'], which: -2 },
];

/** Bytes this process has read through read(2) and its kin so far (Linux). */
function bytesRead(): number {
  return Number(/^rchar: (\d+)$/m.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
}

/** The state's tensors, by name, as the checkpoint's pickle describes them (a Demucs package's `state`, or a state_dict). */
function shapesOf(file: string): ReadonlyMap<string, CheckpointTensor> {
  try {
    return checkDemucsCheckpoint(file).state;
  } catch {
    return checkStateDict(file);
  }
}

/** A copy of `source` (and what lies beside it) in a fresh folder, one weight a row short; returns it and that weight's name. */
function misshapedCopy(source: string, beside: readonly string[], which: number | string = 0): { model: string; tensor: string } {
  const dir = tempDir('stemsplit-misshaped-');
  const model = join(dir, basename(source));
  const stem = (file: string) => file.replace(/\.[^.]+$/, '');
  for (const extension of beside) copyFileSync(`${stem(source)}${extension}`, `${stem(model)}${extension}`);
  writeMisshaped(source, model, which);
  const before = shapesOf(source);
  const changed = [...shapesOf(model)].filter(([name, tensor]) => before.get(name)?.shape.join() !== tensor.shape.join()).map(([name]) => name);
  assert.equal(changed.length, 1, `one tensor changed: ${changed.join(', ')}`);
  return { model, tensor: changed[0] as string };
}

describe("a weight that does not fit the config is refused from the checkpoint's shapes, before any weight is read", () => {
  const cacheDir = tempDir('stemsplit-misshaped-cache-');
  const loaders = modelLoader({ cacheDir, intraOpThreads: 1 });
  const registry = new ModelRegistry({ bundledDir: join(cacheDir, 'no-bundled'), cacheDir, aliases: { '4s': [], '6s': [] } });

  for (const { family, checkpoint, beside, which, tensor: named } of CASES) {
    const skip = checkpoint === undefined || !existsSync(checkpoint) ? 'its fixture is missing' : false;
    test(family, { skip }, async (t) => {
      const { model, tensor } = misshapedCopy(checkpoint as string, beside, named ?? which);
      const load = async (): Promise<unknown> => {
        try {
          await (await loadNamed(registry.resolveModel(model), loaders)).dispose();
          return undefined;
        } catch (error) {
          return error;
        }
      };
      await load(); // the family's modules are imported once (their source files are read too)
      const before = bytesRead();
      const started = performance.now();
      const error = await load();
      const read = bytesRead() - before;
      const size = statSync(model).size;
      t.diagnostic(`refused in ${(performance.now() - started).toFixed(0)} ms having read ${read} bytes of a ${size}-byte checkpoint: ${describeError(error)}`);
      assert.ok(isStemsplitError(error), `refused: ${String(error)}`);
      assert.equal(error.code, 'MODEL_INVALID');
      const message = describeError(error);
      assert.ok(message.includes(tensor), `names ${tensor}: ${message}`);
      assert.ok(message.includes(basename(model)), `names the file: ${message}`);
      assert.ok(!error.message.includes('\n'), 'one line');
      // Hashing the file alone reads all of it, and converting reads the weights again; the structure
      // check reads the pickle, the zip's directory and the 64 KiB its end record may lie in.
      assert.ok(read < size / 2, `read ${read} of ${size} bytes`);
    });
  }
});

/** Through the real CLI: the RoFormer case, and each HTDemucs weight the builder once read without an expected shape. */
const CLI_CASES = CASES.filter(({ family, tensor }) => family === 'BS-RoFormer' || tensor !== undefined);

for (const { family, checkpoint, beside, tensor: named } of CLI_CASES) {
  const skip = checkpoint === undefined || !existsSync(checkpoint) ? 'its fixture is missing' : false;
  test(`through the CLI, ${family}: exit 13, one line naming the tensor and the file, no stems`, { skip }, () => {
    const { model, tensor } = misshapedCopy(checkpoint as string, beside, named ?? 0);
    const dir = dirname(model);
    const song = join(dir, 'song.wav');
    writeSong(song, 1);
    const result = runCli(['split', song, '--model', model, '-o', join(dir, 'out')], {
      STEMSPLIT_DATA_DIR: join(dir, 'data'),
      STEMSPLIT_CACHE_DIR: join(dir, 'cache'),
    });
    assert.equal(result.status, 13, result.stderr);
    const lines = result.stderr.split('\n').filter((line) => line.startsWith('stemsplit:') || /Error|^\s+at /.test(line));
    assert.equal(lines.length, 1, result.stderr);
    assert.ok(lines[0]?.includes(tensor) && lines[0].includes(basename(model)), result.stderr);
    assert.equal(existsSync(join(dir, 'out', 'song')), false, 'no stems');
  });
}
