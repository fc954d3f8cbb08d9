/** The command-line entry of test/support/reliability/load.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { formatLoad, runLoad } from '../../test/support/reliability/load.js';

const { values } = parseArgs({
  options: {
    connections: { type: 'string', default: '50' },
    seconds: { type: 'string', default: '10' },
    posts: { type: 'string', default: '500' },
    repeats: { type: 'string', default: '20' },
    quick: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
const report = await runLoad(
  values.quick
    ? { connections: 50, seconds: 2, posts: 100, repeats: 4, log: (line) => process.stderr.write(`${line}\n`) }
    : {
        connections: Number(values.connections),
        seconds: Number(values.seconds),
        posts: Number(values.posts),
        repeats: Number(values.repeats),
        log: (line) => process.stderr.write(`${line}\n`),
      },
);
console.log(values.json ? JSON.stringify(report, null, 2) : formatLoad(report));
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
