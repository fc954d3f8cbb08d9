/** The command-line entry of test/support/reliability/upload-cut.ts (its report, printed; exit 1 on any problem). */
import { parseArgs } from 'node:util';
import { formatUploadCut, runUploadCut } from '../../test/support/reliability/upload-cut.js';

const { values } = parseArgs({ options: { json: { type: 'boolean', default: false } } });
const report = await runUploadCut((line) => process.stderr.write(`${line}\n`));
console.log(values.json ? JSON.stringify(report, null, 2) : formatUploadCut(report));
if (report.problems.length > 0) {
  console.error(`PROBLEMS:\n- ${report.problems.join('\n- ')}`);
  process.exitCode = 1;
}
