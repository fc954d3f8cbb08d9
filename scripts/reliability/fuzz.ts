/** The command-line entry of test/support/reliability/fuzz.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { formatFuzz, runFuzz } from '../../test/support/reliability/fuzz.js';

const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '10000' },
    seed: { type: 'string', default: String(Date.now() % 100_000) },
    quick: { type: 'boolean', default: false },
    'no-strace': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const report = await runFuzz({
  requests: values.quick ? 1500 : Number(values.requests),
  seed: Number(values.seed),
  strace: !values['no-strace'],
  log: (line) => process.stderr.write(`${line}\n`),
});
console.log(values.json ? JSON.stringify(report, null, 2) : `fuzz (seed ${values.seed})\n${formatFuzz(report)}`);
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
