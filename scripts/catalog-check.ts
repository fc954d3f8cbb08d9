/**
 * Compares the catalog (src/models/catalog.ts) with its publishers' own lists and prints one
 * line per check, so a drifted address, hash, weight or model-data value shows before a user
 * meets it:
 *
 * - Demucs: each file under its folder in `demucs/remote/files.txt`; each bag as the released
 *   `demucs/remote/<name>.yaml` says it (members, weights, segment);
 * - files from UVR's model repository: named in UVR's `filelists/download_checks.json`;
 *   MDX-Net model data: equal to UVR's `mdx_model_data/model_data_new.json` under the UVR key;
 * - MSST releases and Hugging Face addresses: linked from MSST's `docs/pretrained_models.md`
 *   (else said to come from elsewhere, e.g. UVR's list);
 * - pinned configs: the SHA-256 of the file at the pinned commit;
 * - whether python-audio-separator's `models.json` offers the file (for information).
 *
 *   node --import tsx scripts/catalog-check.ts             # reads the lists from GitHub (network)
 *   node --import tsx scripts/catalog-check.ts --git DIR   # from clones DIR/<owner>+<repo>/repo (or DIR/<owner>+<repo>)
 *
 * Exits 1 when a check fails.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseBagFile } from '../src/demucs/bag-file.js';
import { MODEL_CATALOG, type CatalogModel } from '../src/models/catalog.js';
import type { DemucsCatalogModel } from '../src/demucs/catalog.js';
import type { MdxCatalogModel } from '../src/mdx/catalog.js';
import { bagYaml } from '../src/demucs/family.js';

const DEMUCS = 'facebookresearch/demucs';
const UVR_DATA = 'TRvlvr/application_data';
const MSST = 'ZFTurbo/Music-Source-Separation-Training';
const SEPARATOR = 'nomadkaraoke/python-audio-separator';
const UVR_MODELS = 'https://github.com/TRvlvr/model_repo/releases/download/all_public_uvr_models/';

type Reader = (repo: string, file: string, commit?: string) => Promise<Buffer | undefined>;

function gitReader(root: string): Reader {
  return async (repo, file, commit = 'HEAD') => {
    const base = path.join(root, repo.replace('/', '+'));
    const dir = existsSync(path.join(base, 'repo')) ? path.join(base, 'repo') : base;
    try {
      return execFileSync('git', ['-C', dir, 'show', `${commit}:${file}`], { maxBuffer: 64 << 20, stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return undefined;
    }
  };
}

const webReader: Reader = async (repo, file, commit = 'HEAD') => {
  const response = await fetch(`https://raw.githubusercontent.com/${repo}/${commit}/${file}`);
  return response.ok ? Buffer.from(await response.arrayBuffer()) : undefined;
};

interface Line {
  readonly model: string;
  readonly check: string;
  readonly ok: boolean | 'info';
  readonly detail: string;
}

async function demucsChecks(model: DemucsCatalogModel, read: Reader, files: string): Promise<Line[]> {
  const lines: Line[] = [];
  // files.txt: `root: folder/` lines, then the files under that folder.
  const folders = new Map<string, string>();
  let root = '';
  for (const raw of files.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('root:')) root = line.slice('root:'.length).trim();
    else if (line !== '' && !line.startsWith('#')) folders.set(line, root);
  }
  for (const file of model.files) {
    const folder = folders.get(file);
    const url = model.downloads?.find((d) => d.file === file)?.url ?? `https://dl.fbaipublicfiles.com/demucs/hybrid_transformer/${file}`;
    const expected = folder === undefined ? undefined : `https://dl.fbaipublicfiles.com/demucs/${folder}${file}`;
    lines.push({
      model: model.name,
      check: `files.txt ${file}`,
      ok: expected === url,
      detail: expected === undefined ? 'not listed' : expected === url ? (folder ?? '') : `listed at ${expected}, catalog ${url}`,
    });
  }
  const remote = await read(DEMUCS, `demucs/remote/${model.name}.yaml`);
  if (remote === undefined) {
    lines.push({
      model: model.name,
      check: 'remote yaml',
      ok: model.files.length === 1 && model.segment === undefined,
      detail: 'none released (a single model)',
    });
  } else {
    const theirs = parseBagFile(remote.toString('utf8'), `${model.name}.yaml`);
    const ours = parseBagFile(bagYaml(model), 'catalog');
    const same = JSON.stringify(theirs) === JSON.stringify(ours);
    lines.push({
      model: model.name,
      check: 'remote yaml',
      ok: same,
      detail: same ? `members, weights and segment as released` : `released ${JSON.stringify(theirs)}, catalog ${JSON.stringify(ours)}`,
    });
  }
  return lines;
}

interface Lists {
  readonly demucsFiles: string;
  readonly uvrChecks: string;
  readonly uvrModelData: Record<string, Record<string, unknown>>;
  readonly msstTable: string;
  readonly separatorModels: string;
}

async function downloadChecks(model: CatalogModel & Pick<MdxCatalogModel, 'uvrHash' | 'mdxModelData'>, read: Reader, lists: Lists): Promise<Line[]> {
  const lines: Line[] = [];
  for (const download of model.downloads ?? []) {
    const name = decodeURIComponent(download.url.split('/').pop() ?? '');
    if (download.url.startsWith(UVR_MODELS)) {
      const listed = lists.uvrChecks.includes(`"${name}"`);
      lines.push({
        model: model.name,
        check: `UVR download list ${name}`,
        ok: listed,
        detail: listed ? 'named in download_checks.json' : 'not named in download_checks.json',
      });
    } else if (model.family !== 'demucs' && !download.url.startsWith('https://raw.githubusercontent.com/')) {
      const where = [
        lists.msstTable.includes(download.url) ? "MSST's pretrained_models.md links it" : undefined,
        lists.uvrChecks.includes(download.url) ? "UVR's download_checks.json links it" : undefined,
        lists.separatorModels.includes(`"${download.file}"`) ? "python-audio-separator's models.json names the file" : undefined,
        besideCheckpoint(model, download.url) ? 'beside its checkpoint in the same publisher folder' : undefined,
      ].filter((item) => item !== undefined);
      lines.push({
        model: model.name,
        check: `publisher link ${name}`,
        ok: where.length > 0,
        detail: where.length > 0 ? where.join('; ') : "in neither MSST's table, UVR's list nor python-audio-separator's",
      });
    }
    const pinned = /^https:\/\/raw\.githubusercontent\.com\/([^/]+\/[^/]+)\/([0-9a-f]{40})\/(.+)$/.exec(download.url);
    if (pinned !== null && download.sha256 !== undefined) {
      const [, repo, commit, file] = pinned as unknown as [string, string, string, string];
      const bytes = await read(repo, file, commit);
      const actual = bytes === undefined ? undefined : createHash('sha256').update(bytes).digest('hex');
      lines.push({
        model: model.name,
        check: `pinned hash ${name}`,
        ok: actual === download.sha256,
        detail: actual === undefined ? `${repo}@${commit.slice(0, 7)} unreadable` : `${actual.slice(0, 12)}… at ${repo}@${commit.slice(0, 7)}`,
      });
    }
  }
  // python-audio-separator offers UVR's download list and its own models.json.
  const checkpoint = model.downloads?.[0];
  if (model.family !== 'demucs' && checkpoint !== undefined) {
    const offered = [checkpoint.file, decodeURIComponent(checkpoint.url.split('/').pop() ?? '')].some(
      (file) => lists.separatorModels.includes(`"${file}"`) || lists.uvrChecks.includes(`"${file}"`),
    );
    lines.push({ model: model.name, check: 'python-audio-separator', ok: 'info', detail: offered ? 'offers it' : 'does not offer it' });
  }
  if (model.uvrHash !== undefined && model.mdxModelData !== undefined) {
    const theirs = lists.uvrModelData[model.uvrHash];
    const same = theirs !== undefined && Object.entries(model.mdxModelData).every(([key, value]) => theirs[key] === value);
    lines.push({
      model: model.name,
      check: `UVR model data ${model.uvrHash}`,
      ok: same,
      detail: theirs === undefined ? 'key absent' : same ? 'equal' : `UVR ${JSON.stringify(theirs)}`,
    });
  }
  return lines;
}

/** A config served from the folder its (already checked) checkpoint is served from. */
function besideCheckpoint(model: CatalogModel, url: string): boolean {
  const checkpoint = model.downloads?.[0]?.url;
  const folder = (address: string): string => address.slice(0, address.lastIndexOf('/'));
  return checkpoint !== undefined && checkpoint !== url && folder(checkpoint) === folder(url);
}

async function main(): Promise<void> {
  const gitAt = process.argv.indexOf('--git');
  const read = gitAt >= 0 ? gitReader(process.argv[gitAt + 1] ?? '.') : webReader;
  const text = async (repo: string, file: string): Promise<string> => {
    const bytes = await read(repo, file);
    if (bytes === undefined) throw new Error(`cannot read ${repo} ${file}`);
    return bytes.toString('utf8');
  };
  const lists: Lists = {
    demucsFiles: await text(DEMUCS, 'demucs/remote/files.txt'),
    uvrChecks: await text(UVR_DATA, 'filelists/download_checks.json'),
    uvrModelData: JSON.parse(await text(UVR_DATA, 'mdx_model_data/model_data_new.json')) as Record<string, Record<string, unknown>>,
    msstTable: await text(MSST, 'docs/pretrained_models.md'),
    separatorModels: await text(SEPARATOR, 'audio_separator/models.json'),
  };
  const lines: Line[] = [];
  for (const model of MODEL_CATALOG) {
    if (model.family === 'demucs') lines.push(...(await demucsChecks(model, read, lists.demucsFiles)));
    lines.push(...(await downloadChecks(model, read, lists)));
  }
  for (const line of lines) console.log(`${line.ok === 'info' ? 'info' : line.ok ? 'ok  ' : 'FAIL'}  ${line.model.padEnd(28)} ${line.check}: ${line.detail}`);
  const failed = lines.filter((line) => line.ok === false).length;
  console.log(`${lines.filter((line) => line.ok === true).length} checks passed, ${failed} failed, over ${MODEL_CATALOG.length} catalog models`);
  if (failed > 0) process.exitCode = 1;
}

await main();
