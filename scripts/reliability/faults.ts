/** The command-line entry of test/support/reliability/faults.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { formatFaults, runFaults } from '../../test/support/reliability/faults.js';

const { values } = parseArgs({
  options: {
    jobs: { type: 'string', default: '100' },
    kills: { type: 'string', default: '10' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const report = await runFaults({
  jobs: values.quick ? 20 : Number(values.jobs),
  kills: values.quick ? 3 : Number(values.kills),
  seed: Number(values.seed),
  log: (line) => process.stderr.write(`${line}\n`),
});
console.log(values.json ? JSON.stringify(report, null, 2) : `faults (seed ${values.seed})\n${formatFaults(report)}`);
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
