/**
 * The family contract, one suite run over every record in MODEL_FAMILIES (as Hono runs one case file over every
 * router): its words, its options table read as the CLI and the API read it (in range taken, out of range refused
 * naming the flag), its catalog rows, and its `claim` of files that are not its own. Adding a family to the list
 * runs these cases on it with no edit here. Nothing is loaded: no ONNX Runtime, no fixtures.
 *
 * @tier quick
 */
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import { StemsplitError } from '../src/errors.js';
import { MODEL_CATALOG } from '../src/models/catalog.js';
import { familyOptionNames, familyOptionsFrom, MODEL_FAMILIES } from '../src/models/families.js';
import type { FamilyContractCases, OwnFile } from '../src/contract/cases.js';
import { flagAttribute, flagName, type FamilyOption, type ModelFamilyRecord } from '../src/contract/family.js';
import { isEnsembleRef, ModelRegistry } from '../src/models/registry.js';
import { TASKS, taskOf } from '../src/models/tasks.js';
import { fixtureFile } from './support/fixtures.js';
import { tempDir } from './support/temp-dir.js';

const TYPES = ['integer', 'number', 'switch', 'choice'];
/** A claim reads a few bytes of a file at most: this is ample on a busy machine. */
const CLAIM_MS = 500;
/** A large file a claim must not read whole (sparse: it costs no disk). */
const LARGE_BYTES = 512 * 1024 * 1024;

function inRange(row: FamilyOption, value: number): boolean {
  if (row.type === 'integer' && !Number.isInteger(value)) return false;
  if (row.min !== undefined && value < row.min) return false;
  if (row.max !== undefined && value > row.max) return false;
  if (row.above !== undefined && value <= row.above) return false;
  return row.below === undefined || value < row.below;
}

/** A value the row takes, from its own range. */
function takenValue(row: FamilyOption): number | boolean | string {
  if (row.type === 'switch') return true;
  if (row.type === 'choice') return row.choices?.[0] ?? '';
  const { min, max, above, below } = row;
  const candidates = [
    min,
    max,
    above === undefined ? undefined : above + 1,
    above === undefined ? undefined : above + 0.5,
    below === undefined ? undefined : below - 1,
    below === undefined ? undefined : below / 2,
    1,
    0,
  ];
  const value = candidates.find((candidate): candidate is number => candidate !== undefined && inRange(row, candidate));
  assert.ok(value !== undefined, `${row.flags}: no value found in its own range`);
  return value;
}

/** Values the row refuses: past each end of its range, a fraction for a whole number, words, a wrong choice. */
function refusedValues(row: FamilyOption): unknown[] {
  if (row.type === 'switch') return ['yes', 1];
  if (row.type === 'choice') return ['no-such-choice', 3];
  const ends = [row.min === undefined ? undefined : row.min - 1, row.max === undefined ? undefined : row.max + 1, row.above, row.below];
  const fraction = row.type === 'integer' ? [(takenValue(row) as number) + 0.5] : [];
  return [...ends.filter((value) => value !== undefined), ...fraction, 'abc', '', Number.NaN];
}

/** Scratch files that belong to no family: empty, random bytes under every extension a family might take, a large one. */
function strangeFiles(): string[] {
  const dir = tempDir('stemsplit-contract-');
  const files: string[] = [];
  const write = (name: string, bytes: Uint8Array) => {
    files.push(join(dir, name));
    writeFileSync(join(dir, name), bytes);
  };
  write('empty.bin', new Uint8Array());
  write('noise', randomBytes(4096));
  write('song.wav', randomBytes(4096));
  write('notes.txt', Buffer.from('not a model\n'));
  for (const ext of ['th', 'yaml', 'ckpt', 'pth', 'onnx', 'json']) write(`garbage.${ext}`, randomBytes(4096));
  const large = join(dir, 'large.pth');
  const fd = openSync(large, 'w');
  ftruncateSync(fd, LARGE_BYTES);
  closeSync(fd);
  files.push(large);
  return files;
}

/** A claim of `file`: a ClaimedFile of it, none, or a StemsplitError in one line; synchronous and quick. */
function checkedClaim(family: ModelFamilyRecord, file: string): void {
  const started = performance.now();
  let claimed: unknown;
  try {
    claimed = family.claim(file);
  } catch (error) {
    assert.ok(error instanceof StemsplitError, `${family.id} claim of ${file} threw ${String(error)}, not a StemsplitError`);
    assert.doesNotMatch(error.message, /\n/, 'one line');
    return;
  } finally {
    assert.ok(performance.now() - started < CLAIM_MS, `${family.id} claim of ${file} took ${(performance.now() - started).toFixed(0)} ms`);
  }
  assert.ok(!(claimed instanceof Promise), `${family.id}: claim is synchronous (it reads, it runs nothing)`);
  if (claimed !== undefined) assert.equal((claimed as { path: string }).path, file, `${family.id} claims ${file} as itself`);
}

/** Every strange file claimed by `family`, each checked, the whole in bounded memory. */
function checkedClaims(family: ModelFamilyRecord): void {
  const before = process.memoryUsage().rss;
  for (const file of files) checkedClaim(family, file);
  const grown = process.memoryUsage().rss - before;
  assert.ok(grown < LARGE_BYTES / 4, `${family.id}'s claims grew the process by ${(grown / 2 ** 20).toFixed(0)} MiB: one read a large file whole`);
}

/** Each family's own cases (src/<folder>/contract-cases.ts, contract/cases.ts), by the id of the record they name. */
async function ownCases(): Promise<Map<string, FamilyContractCases>> {
  const folders = readdirSync('src', { withFileTypes: true }).filter(
    (entry) => entry.isDirectory() && readdirSync(join('src', entry.name)).includes('contract-cases.ts'),
  );
  const cases = await Promise.all(
    folders.map(async (entry) => ((await import(`../src/${entry.name}/contract-cases.js`)) as { contractCases: FamilyContractCases }).contractCases),
  );
  return new Map(cases.map((entry) => [entry.family.id, entry]));
}

/** An own file where it is (the project's root, or the shared fixtures: undefined, said, when they are missing). */
function ownFilePath(file: OwnFile): string | undefined {
  if (file.inRepository === true) return resolve(file.path);
  const [folder = '', ...rest] = file.path.split('/');
  return fixtureFile(folder, rest.join('/'));
}

/** The registry as a split asks it for a file: the first family in the list's order that claims it names it. */
const registry = new ModelRegistry({
  bundledDir: tempDir('stemsplit-contract-bundled-'),
  cacheDir: tempDir('stemsplit-contract-cache-'),
  aliases: { '4s': [], '6s': [] },
});

const optionNames = familyOptionNames();
const files = strangeFiles();
const casesById = await ownCases();

describe('the family contract', () => {
  test('the list: at least one family, each id once', () => {
    assert.ok(MODEL_FAMILIES.length > 0);
    const ids = MODEL_FAMILIES.map((family) => family.id);
    assert.deepEqual(new Set(ids).size, ids.length, `ids: ${ids.join(', ')}`);
  });

  test('the claim check refuses a claim that reads a large file whole', () => {
    const [model] = MODEL_FAMILIES;
    assert.ok(model);
    const readsWhole = (file: string) => {
      readFileSync(file);
      return undefined;
    };
    const greedy: ModelFamilyRecord = { ...model, id: 'greedy', claim: readsWhole };
    assert.throws(() => checkedClaims(greedy), /greedy claim of .*large\.pth took|greedy's claims grew the process/);
  });

  test('every catalog row is of a family in the list that can pull it, and names its terms, stems and task', () => {
    for (const row of MODEL_CATALOG) {
      const family = MODEL_FAMILIES.find((record) => record.id === row.family);
      assert.ok(family, `${row.name}: family ${row.family} is in the list`);
      assert.ok(family.pull, `${row.name}: family ${row.family} has pull steps`);
      assert.match(row.terms, /\S/, `${row.name}: terms`);
      assert.ok(row.sources.length > 0 && row.files.length > 0, `${row.name}: stems and files`);
      assert.ok(TASKS.includes(taskOf(row.name, row.sources)), `${row.name}: a task`);
    }
  });

  for (const family of MODEL_FAMILIES) {
    describe(`family ${family.id}`, () => {
      test('its record has the words, the table and the steps the registry, the CLI and the API read', () => {
        assert.match(family.id, /^[a-z0-9-]+$/);
        assert.match(family.takers, /\S/);
        assert.match(family.files, /\S/);
        assert.equal(typeof family.claim, 'function');
        assert.equal(typeof family.load, 'function');
        assert.equal(typeof family.options, 'function');
        assert.match(family.listedName({}), /^\S+$/, 'its name in models list');
        assert.equal(family.options({}), undefined, 'no options given: none read');
      });

      test('each row of its options table declares a flag, a key, a type with its range, help and a python-audio-separator spelling', () => {
        const flags = family.optionTable.map((row) => flagName(row.flags));
        assert.equal(new Set(flags).size, flags.length, `each flag once: ${flags.join(', ')}`);
        for (const row of family.optionTable) {
          assert.ok(TYPES.includes(row.type), `${row.flags}: type ${row.type}`);
          const takesValue = row.type !== 'switch';
          assert.match(row.flags, takesValue ? /^--[a-z0-9-]+ <[a-z-]+>$/ : /^--[a-z0-9-]+$/, `${row.flags}: as commander declares a ${row.type}`);
          assert.match(row.key, /^[A-Za-z][A-Za-z0-9]*$/, `${row.flags}: key`);
          assert.match(row.help, /^[^\n]*\S[^\n]*$/, `${row.flags}: one line of help`);
          if (row.type === 'choice') assert.ok((row.choices ?? []).length > 0, `${row.flags}: choices`);
          if (row.separatorSpelling !== undefined) assert.match(row.separatorSpelling, /^--[a-z0-9_]+$/, `${row.flags}: python-audio-separator's spelling`);
          assert.ok(
            optionNames.get(flagAttribute(row.flags))?.includes(family),
            `${row.flags}: the API's modelOptions.${flagAttribute(row.flags)} names ${family.id}`,
          );
        }
      });

      test('each option in range is read, as the CLI gives it (a string) and as the API does (a value)', () => {
        for (const row of family.optionTable) {
          const value = takenValue(row);
          const attribute = flagAttribute(row.flags);
          for (const given of typeof value === 'number' ? [value, String(value)] : [value]) {
            const read = family.options({ [attribute]: given });
            assert.ok(read !== undefined, `${row.flags} ${String(given)} is read`);
            assert.ok(
              JSON.stringify(read).includes(`"${row.key}":${JSON.stringify(value)}`),
              `${row.flags} ${String(given)} is read under ${row.key}: ${JSON.stringify(read)}`,
            );
            familyOptionsFrom({ [attribute]: given });
          }
        }
      });

      test('each option out of range is refused in one line naming its flag', () => {
        for (const row of family.optionTable) {
          const attribute = flagAttribute(row.flags);
          for (const value of refusedValues(row)) {
            for (const read of [() => family.options({ [attribute]: value }), () => familyOptionsFrom({ [attribute]: value })]) {
              assert.throws(
                read,
                (error: unknown) =>
                  error instanceof StemsplitError &&
                  error.code === 'USAGE' &&
                  error.message.startsWith(`${flagName(row.flags)} must be `) &&
                  !error.message.includes('\n'),
                `${row.flags} ${JSON.stringify(value)} refused`,
              );
            }
          }
        }
      });

      test("its catalog rows (its folder's catalog.ts) name it, and it has the pull steps to fetch them", () => {
        for (const row of family.catalog ?? []) {
          assert.equal(row.family, family.id, `${row.name}: its family`);
          assert.ok(family.pull, `${row.name}: ${family.id} can pull it`);
        }
      });

      test('claim of a file of no family (empty, random bytes under each extension, 512 MiB) is quick, reads little and runs nothing', () => {
        checkedClaims(family);
      });

      test("its own files (its folder's contract-cases.ts) are claimed by it before any other family, as the registry asks them", () => {
        const cases = casesById.get(family.id);
        assert.ok(cases, `src/<its folder>/contract-cases.ts names ${family.id}'s record`);
        assert.ok(cases.ownFiles.length > 0, 'at least one file of its kind');
        for (const file of cases.ownFiles) {
          const path = ownFilePath(file);
          if (path === undefined) continue;
          const ref = registry.resolve(path);
          assert.ok(!isEnsembleRef(ref), file.path);
          assert.equal(ref.kind, family.id, `${file.path}: the first family to claim it`);
          assert.equal(ref.path, resolve(file.inRepository === true ? (file.claimedPath ?? file.path) : path), `${file.path}: claimed as itself`);
          for (const [key, value] of Object.entries(file.options ?? {})) assert.deepEqual(ref.options?.[key], value, `${file.path}: its ${key}`);
        }
      });
    });
  }
});
