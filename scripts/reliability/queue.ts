/** The command-line entry of test/support/reliability/queue.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { formatQueue, runQueue } from '../../test/support/reliability/queue.js';

const { values } = parseArgs({
  options: { queued: { type: 'string', default: '200' }, quick: { type: 'boolean', default: false }, json: { type: 'boolean', default: false } },
});
const report = await runQueue({ queued: values.quick ? 30 : Number(values.queued), log: (line) => process.stderr.write(`${line}\n`) });
console.log(values.json ? JSON.stringify(report, null, 2) : formatQueue(report));
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
