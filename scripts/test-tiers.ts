/**
 * The test suite in two tiers, chosen by a tag in each file rather than a list kept elsewhere:
 *
 *   quick  the test files whose leading comment says `@tier quick`: tests that start nothing but, at most, an
 *          in-process server on a loopback port. The tag is checked: a quick file that calls anything in
 *          STARTS_SOMETHING (a child process, PostgreSQL, a browser, ONNX Runtime, reference fixtures, a split
 *          worker, the reliability harness) is refused, and a tier past QUICK_BUDGET_S is named.
 *   full   every test file (`npm test` runs it after the typecheck).
 *
 *   node --import tsx scripts/test-tiers.ts quick|full [--list]
 *
 * Runs the tier's files through `node --test`, one file at a time, and prints how long the tier took.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import ts from 'typescript';

const QUICK_BUDGET_S = 60;
const QUICK_TAG = /^\s*\*\s*@tier quick\s*$/m;

/** The calls that start something slow or outside this process: a quick file makes none of them. */
const STARTS_SOMETHING = new Set([
  'runCli',
  'spawnCli',
  'ServeProcess', // the real CLI or server as a child process
  'spawn',
  'spawnSync',
  'exec',
  'execSync',
  'execFile',
  'execFileSync',
  'fork', // any other child process
  'freshDatabase',
  'relayTo',
  'suiteOnPostgres', // PostgreSQL
  'launch', // a browser
  'fixtureDir',
  'msstFixtures',
  'fixtureManifest', // reference fixtures: real models over real audio
  'createOrtSession',
  'loadManifestModel',
  'loadDemucs',
  'loadMdx',
  'loadRoformer',
  'loadScnet',
  'loadMdx23c', // ONNX Runtime
  'workerSplitter',
  'splitAudioFile', // splits, in worker processes
  'runFuzz',
  'runFaults',
  'runUploadCut', // the reliability harness
]);

type Tier = 'quick' | 'full';

function testFiles(): string[] {
  return readdirSync('test')
    .filter((name) => name.endsWith('.test.ts'))
    .sort()
    .map((name) => `test/${name}`);
}

/** The names `file` calls (functions, methods, constructors). */
function callsOf(file: string): Set<string> {
  const calls = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) || ts.isNewExpression(node)) {
      const callee = node.expression;
      if (ts.isIdentifier(callee)) calls.add(callee.text);
      else if (ts.isPropertyAccessExpression(callee)) calls.add(callee.name.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false));
  return calls;
}

/** The quick files; throws naming a tagged file that starts something. */
function quickFiles(): string[] {
  const tagged = testFiles().filter((file) => QUICK_TAG.test(readFileSync(file, 'utf8')));
  const wrong = tagged.flatMap((file) => {
    const starts = [...callsOf(file)].filter((call) => STARTS_SOMETHING.has(call));
    return starts.length === 0 ? [] : [`${file} is tagged @tier quick but calls ${starts.join(', ')}`];
  });
  if (wrong.length > 0) throw new Error(wrong.join('\n'));
  return tagged;
}

function filesOf(tier: Tier): string[] {
  return tier === 'full' ? testFiles() : quickFiles();
}

const [tier, flag] = process.argv.slice(2);
if (tier !== 'quick' && tier !== 'full') {
  console.error('usage: node --import tsx scripts/test-tiers.ts quick|full [--list]');
  process.exit(2);
}
const files = filesOf(tier);
if (flag === '--list') {
  console.log(files.join('\n'));
} else {
  const started = Date.now();
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-concurrency=1', ...files], { stdio: 'inherit' });
  const seconds = (Date.now() - started) / 1000;
  console.error(`${tier} tier: ${files.length} test files in ${seconds.toFixed(0)} s`);
  process.exitCode = run.status ?? 1;
  // A warning, not a failure: on a busy machine the same files take longer.
  if (tier === 'quick' && seconds > QUICK_BUDGET_S)
    console.error(`the quick tier took over ${QUICK_BUDGET_S} s: if the machine was quiet, untag its slowest file (\`@tier quick\`)`);
}
