/**
 * The catalog tells the truth (issue 38): stem names lower-case in every entry and however a yaml
 * spells them, one terms rule for every entry (what the publisher states and where; "not stated"
 * naming the page that states nothing), a source and a hash source for every file, MDX-Net model
 * data equal to the engine's table for the same UVR key, each entry's task as `models list` shows
 * it. scripts/catalog-check.ts compares the catalog with the publishers' own lists (network).
 */
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { MDX_CATALOG } from '../src/mdx/catalog.js';
import { builtInModelData } from '../src/mdx/model-data.js';
import { MODEL_CATALOG, catalogModel, type CatalogModel } from '../src/models/catalog.js';
import { taskOf } from '../src/models/tasks.js';
import { readMdx23cConfig } from '../src/msst/mdx23c/config.js';
import { readRoformerConfig } from '../src/msst/roformer/config.js';
import { tempDir } from './support/server.js';

const UVR_MODELS = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models/';
const work = tempDir('stemsplit-catalog-');
after(() => rmSync(work, { recursive: true, force: true }));

const model = (name: string): CatalogModel => {
  const found = catalogModel(name);
  assert.ok(found, `catalog has ${name}`);
  return found;
};

describe('catalog', () => {
  it('names every stem in lower case, each once', () => {
    for (const entry of MODEL_CATALOG) {
      for (const stem of entry.sources) assert.equal(stem, stem.toLowerCase(), `${entry.name}: ${stem}`);
      assert.equal(new Set(entry.sources).size, entry.sources.length, entry.name);
    }
    assert.equal(new Set(MODEL_CATALOG.map((entry) => entry.name)).size, MODEL_CATALOG.length, 'names are unique');
  });

  it('lists bs-roformer-zfturbo-4s in its yaml order and lets scnet-large take --two-stems vocals like the other 4-stem entries', () => {
    assert.deepEqual(model('bs-roformer-zfturbo-4s').sources, ['drums', 'bass', 'other', 'vocals']);
    for (const entry of MODEL_CATALOG.filter((m) => m.sources.length === 4)) assert.ok(entry.sources.includes('vocals'), entry.name);
  });

  it('applies one terms rule: a file from UVR\'s repository carries UVR\'s terms; "not stated" names where nothing is stated', () => {
    const uvrTerms = model('kim-vocal-2').terms;
    for (const entry of MODEL_CATALOG) {
      const fromUvr = entry.downloads?.some((download) => download.url.startsWith(UVR_MODELS) && !download.file.endsWith('.yaml')) ?? false;
      if (fromUvr) assert.equal(entry.terms, uvrTerms, entry.name);
      if (/^not stated/.test(entry.terms)) assert.match(entry.terms, /UVR|MSST|huggingface\.co\/|github\.com\//, `${entry.name} says where: ${entry.terms}`);
    }
    assert.match(model('mel-roformer-dereverb').terms, /^GPL-3\.0, per its Hugging Face card/);
  });

  it('gives every file an address and where its hash comes from; published hashes are pinned', () => {
    for (const entry of MODEL_CATALOG) {
      for (const file of entry.files) {
        const download = entry.downloads?.find((d) => d.file === file);
        if (download === undefined) {
          assert.equal(entry.family, 'demucs', `${entry.name}: ${file} has no address`);
          assert.match(file, /^[0-9a-z_]+-[0-9a-f]{8}\.th$/, `${entry.name}: a release name carries its hash prefix`);
          continue;
        }
        assert.match(download.url, /^https:\/\//, `${entry.name}: ${file}`);
        assert.ok(download.hashSource.length > 0, `${entry.name}: ${file}`);
        if (download.sha256 !== undefined) assert.match(download.sha256, /^([0-9a-f]{64}|[0-9a-f]{8})$/, `${entry.name}: ${file}`);
      }
    }
    const kim = model('mel-roformer-kim-vocals').downloads?.find((d) => d.file === 'MelBandRoformer.ckpt');
    assert.equal(kim?.sha256, '87201f4d31afb5bc79993230fc49446918425574db48c01c405e44f365c7559e');
  });

  it("keeps MDX-Net model data equal to the engine's table where it has the same UVR key", () => {
    for (const entry of MDX_CATALOG) {
      assert.ok(entry.uvrHash && entry.mdxModelData, `${entry.name}: the pull checks the UVR key and writes the model data beside the file`);
      const table = builtInModelData(entry.uvrHash);
      if (table === undefined) continue; // Newer than the engine's table: NAME.json beside the file carries it.
      const { name, ...data } = table;
      assert.deepEqual(data, entry.mdxModelData, entry.name);
      assert.equal(`${name}.onnx`, entry.files[0], entry.name);
    }
  });

  it("shows each added model's task as models list derives it", () => {
    const expected: Record<string, string> = {
      'uvr-mdx-net-voc-ft': 'vocals',
      'uvr-mdx-net-inst-hq-3': 'instrumental',
      'bs-roformer-viperx-1296': 'vocals',
      'mel-roformer-becruily-inst': 'instrumental',
      'mdx23c-drumsep': 'drum-parts',
      'mel-roformer-karaoke': 'karaoke',
      'mel-roformer-dereverb': 'dereverb',
      'mel-roformer-denoise': 'denoise',
      hdemucs_mmi: 'four-stems',
      mdx_extra_q: 'four-stems',
    };
    for (const [name, task] of Object.entries(expected)) assert.equal(taskOf(name, model(name).sources), task, name);
  });

  it("reads a yaml's instruments lower-cased, whatever case it uses (UVR's copies say Vocals, Kick)", () => {
    const bs = join(work, 'bs.yaml');
    writeFileSync(
      bs,
      'audio:\n  chunk_size: 44100\nmodel:\n  dim: 8\n  depth: 1\n  num_stems: 1\ntraining:\n  instruments: [Vocals, Instrumental]\n  target_instrument: Vocals\n',
    );
    const roformer = readRoformerConfig(bs, 'bs_roformer');
    assert.deepEqual([roformer.instruments, roformer.target], [['vocals'], 'vocals']);
    const drums = join(work, 'drums.yaml');
    writeFileSync(
      drums,
      'audio:\n  chunk_size: 261120\n  n_fft: 8192\n  hop_length: 1024\n  dim_f: 4096\n  num_channels: 2\n  sample_rate: 44100\nmodel:\n  num_subbands: 4\n  num_scales: 1\n  scale: [2, 2]\n  num_blocks_per_scale: 1\n  num_channels: 8\n  growth: 8\n  bottleneck_factor: 2\n  norm: InstanceNorm\n  act: gelu\ntraining:\n  instruments: [Kick, Snare]\n  target_instrument: null\n',
    );
    assert.deepEqual(readMdx23cConfig(drums).instruments, ['kick', 'snare']);
  });
});
