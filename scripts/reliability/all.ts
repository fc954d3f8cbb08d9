/**
 * Every reliability suite in turn, with the tables docs/reliability.md quotes: SSRF (the table of
 * test/ssrf.test.ts, re-run), fuzzing, crash faults, cut uploads, a full disk, load, the queue.
 *
 *   nice -n 10 node --import tsx scripts/reliability/all.ts [--quick] [--only fuzz,faults,...]
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { formatFaults, runFaults } from '../../test/support/reliability/faults.js';
import { formatFuzz, runFuzz } from '../../test/support/reliability/fuzz.js';
import { isMain, table } from '../../test/support/reliability/common.js';
import { formatLoad, runLoad } from '../../test/support/reliability/load.js';
import { formatQueue, runQueue } from '../../test/support/reliability/queue.js';
import { formatUploadCut, runUploadCut } from '../../test/support/reliability/upload-cut.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Runs test/ssrf.test.ts and counts its cases by what they refuse. */
export function runSsrfTable(): { rows: Array<[string, number, number]>; problems: string[] } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--test', '--test-reporter=tap', 'test/ssrf.test.ts'], {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 600_000,
  });
  const groups = new Map<string, [number, number]>();
  for (const match of run.stdout.matchAll(/^\s*(not ok|ok) \d+ - (.+)$/gm)) {
    const [, verdict = '', name = ''] = match;
    if (/^(the address check|guarded fetch|direct_url through)/.test(name)) continue; // the suites themselves
    const group =
      name.startsWith('refuses ') && !name.includes(' ', 8)
        ? 'address literals and spellings'
        : name.startsWith('allows ')
          ? 'public addresses (allowed)'
          : name;
    const [ok, bad] = groups.get(group) ?? [0, 0];
    groups.set(group, verdict === 'ok' ? [ok + 1, bad] : [ok, bad + 1]);
  }
  const rows = [...groups].map(([group, [ok, bad]]) => [group, ok, bad] as [string, number, number]);
  const failed = rows.filter(([, , bad]) => bad > 0).map(([group]) => `ssrf: ${group}`);
  return { rows, problems: run.status === 0 ? failed : [...failed, `test/ssrf.test.ts exited ${run.status}`] };
}

function runDiskFullChild(): { text: string; problems: string[] } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/reliability/disk-full.ts'], { cwd: ROOT, encoding: 'utf8', timeout: 600_000 });
  return {
    text: run.stdout.trim() || run.stderr.trim(),
    problems: run.status === 0 ? [] : [`disk-full exited ${run.status}: ${run.stderr.trim().split('\n').slice(-3).join(' ')}`],
  };
}

if (isMain(import.meta.url)) {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, only: { type: 'string' }, seed: { type: 'string', default: '4242' } },
  });
  const quick = values.quick;
  const seed = Number(values.seed);
  const wanted = new Set((values.only ?? 'ssrf,fuzz,faults,upload-cut,disk-full,load,queue').split(','));
  const log = (line: string) => process.stderr.write(`${line}\n`);
  const problems: string[] = [];
  const section = (title: string, body: string) => console.log(`\n## ${title}\n\n${body}`);

  if (wanted.has('ssrf')) {
    const ssrf = runSsrfTable();
    section('SSRF (test/ssrf.test.ts)', table(['refused target', 'cases passed', 'failed'], ssrf.rows));
    problems.push(...ssrf.problems);
  }
  if (wanted.has('fuzz')) {
    const fuzz = await runFuzz({ requests: quick ? 1500 : 10_000, seed, strace: spawnSync('strace', ['-V']).status === 0, log });
    section(`Fuzzing (seed ${seed})`, formatFuzz(fuzz));
    problems.push(...fuzz.problems);
  }
  if (wanted.has('faults')) {
    const faults = await runFaults({ jobs: quick ? 20 : 100, kills: quick ? 3 : 10, seed, log });
    section(`Crash faults (seed ${seed})`, formatFaults(faults));
    problems.push(...faults.problems);
  }
  if (wanted.has('upload-cut')) {
    const cut = await runUploadCut(log);
    section('Uploads cut off mid-stream', formatUploadCut(cut));
    problems.push(...cut.problems);
  }
  if (wanted.has('disk-full')) {
    const disk = runDiskFullChild();
    section('Disk full', disk.text);
    problems.push(...disk.problems);
  }
  if (wanted.has('load')) {
    const load = await runLoad(
      quick ? { connections: 50, seconds: 2, posts: 100, repeats: 4, log } : { connections: 50, seconds: 10, posts: 500, repeats: 20, log },
    );
    section('Load (loopback, autocannon)', formatLoad(load));
    problems.push(...load.problems);
  }
  if (wanted.has('queue')) {
    const queue = await runQueue({ queued: quick ? 30 : 200, log });
    section('Queue', formatQueue(queue));
    problems.push(...queue.problems);
  }
  if (problems.length > 0) {
    console.error(`PROBLEMS:\n- ${problems.join('\n- ')}`);
    process.exitCode = 1;
  }
}
