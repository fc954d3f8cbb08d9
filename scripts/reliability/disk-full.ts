/** The command-line entry of test/support/reliability/disk-full.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { MountRefused, formatDiskFull, runDiskFull } from '../../test/support/reliability/disk-full.js';

const { values } = parseArgs({ options: { json: { type: 'boolean', default: false }, 'in-namespace': { type: 'boolean', default: false } } });
try {
  const report = await runDiskFull((line) => process.stderr.write(`${line}\n`));
  console.log(values.json ? JSON.stringify(report, null, 2) : formatDiskFull(report));
  if (report.problems.length > 0) {
    console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
    process.exitCode = 1;
  }
} catch (error) {
  if (!(error instanceof MountRefused)) throw error;
  const namespaces = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'true']).status === 0;
  if (values['in-namespace'] || !namespaces) {
    console.error(`disk-full: ${error.message}; not run`);
    process.exitCode = 2;
  } else {
    // Not root: try again as root of a fresh user and mount namespace.
    const self = fileURLToPath(import.meta.url);
    const rerun = spawnSync(
      'unshare',
      ['--user', '--map-root-user', '--mount', process.execPath, '--import', 'tsx', self, '--in-namespace', ...(values.json ? ['--json'] : [])],
      { stdio: 'inherit' },
    );
    process.exitCode = rerun.status ?? 2;
  }
}
