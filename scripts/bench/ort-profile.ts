/**
 * Where ONNX Runtime spends a model's time, per operator type and per node: sums the profiles
 * that sessions write when `STEMSPLIT_ORT_PROFILE` is set (src/onnx/session.ts), e.g.
 *
 *   STEMSPLIT_ORT_PROFILE=/tmp/prof/demucs node --import tsx scripts/bench/demucs.ts --seconds 15
 *   node --import tsx scripts/bench/ort-profile.ts /tmp/prof [--top 15]
 *
 * Reads every `*.json` profile in the folder (one per session). Node times are ORT's own
 * (kernel time per node, summed over runs); profiling adds overhead, so compare shares, not totals.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '15' } } });
const folder = positionals[0];
if (!folder) throw new Error('usage: ort-profile.ts <folder with the profiles> [--top 15]');

interface ProfileEvent {
  readonly cat?: string;
  readonly name?: string;
  readonly dur?: number;
  readonly args?: { readonly op_name?: string; readonly output_type_shape?: unknown };
}

interface Total {
  microseconds: number;
  calls: number;
}

const byOperator = new Map<string, Total>();
const byNode = new Map<string, Total & { operator: string }>();
const files = readdirSync(folder).filter((name) => name.endsWith('.json'));
for (const file of files) {
  const events = JSON.parse(readFileSync(path.join(folder, file), 'utf8')) as ProfileEvent[];
  for (const event of events) {
    if (event.cat !== 'Node' || !event.name?.endsWith('_kernel_time') || event.dur === undefined) continue;
    const operator = event.args?.op_name ?? '?';
    const node = `${path.basename(file, '.json').replace(/_\d{4}-.*$/, '')}/${event.name.slice(0, -'_kernel_time'.length)}`;
    add(byOperator, operator, event.dur);
    const entry = byNode.get(node) ?? { microseconds: 0, calls: 0, operator };
    entry.microseconds += event.dur;
    entry.calls += 1;
    byNode.set(node, entry);
  }
}

function add(totals: Map<string, Total>, key: string, microseconds: number): void {
  const total = totals.get(key) ?? { microseconds: 0, calls: 0 };
  total.microseconds += microseconds;
  total.calls += 1;
  totals.set(key, total);
}

const all = [...byOperator.values()].reduce((sum, total) => sum + total.microseconds, 0);
const share = (microseconds: number) => `${((100 * microseconds) / all).toFixed(1)} %`;
console.log(`${files.length} profiles, ${(all / 1e6).toFixed(2)} s of node time`);
console.log('| operator | time | share | calls |');
console.log('|---|---:|---:|---:|');
for (const [operator, total] of [...byOperator].sort((a, b) => b[1].microseconds - a[1].microseconds)) {
  console.log(`| ${operator} | ${(total.microseconds / 1e6).toFixed(2)} s | ${share(total.microseconds)} | ${total.calls} |`);
}
console.log(`\nthe ${values.top} slowest nodes`);
console.log('| node | operator | time | share |');
console.log('|---|---|---:|---:|');
for (const [node, total] of [...byNode].sort((a, b) => b[1].microseconds - a[1].microseconds).slice(0, Number(values.top))) {
  console.log(`| ${node} | ${total.operator} | ${(total.microseconds / 1e6).toFixed(2)} s | ${share(total.microseconds)} |`);
}
