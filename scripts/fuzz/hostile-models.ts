/**
 * The longer run of hostile model files (issue 37; test/support/hostile/fuzz.ts): every named case and
 * seeded random mutations loaded as the split worker loads them, then every named case through the
 * real CLI. Prints the figures docs/reliability.md quotes; exits 1 when a rule is broken.
 *
 *   node --import tsx scripts/fuzz/hostile-models.ts [--seed N] [--random 5000] [--no-cli] [--json]
 */
import { parseArgs } from 'node:util';
import { formatHostileFuzz, runHostileFuzz } from '../../test/support/hostile/fuzz.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    random: { type: 'string', default: '5000' },
    'no-cli': { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const report = await runHostileFuzz({
  seed: Number(values.seed),
  random: Number(values.random),
  cli: !values['no-cli'],
  log: (line) => process.stderr.write(`${line}\n`),
});
console.log(values.json ? JSON.stringify(report, null, 2) : `hostile model files (seed ${values.seed})\n${formatHostileFuzz(report)}`);
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
