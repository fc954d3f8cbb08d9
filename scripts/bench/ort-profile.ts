/**
 * Where ONNX Runtime spends a model's time, per operator type and per node: sums the profiles
 * that sessions write when `STEMSPLIT_ORT_PROFILE` is set (src/onnx/session.ts), e.g.
 *
 *   STEMSPLIT_ORT_PROFILE=/tmp/prof/demucs node --import tsx scripts/bench/demucs.ts --seconds 15
 *   node --import tsx scripts/bench/ort-profile.ts /tmp/prof [--top 15]
 *
 * Reads every `*.json` profile in the folder (one per session). Node times are ORT's own
 * (kernel time per node, summed over runs); profiling adds overhead, so compare shares, not totals.
 * For the operators that do the arithmetic (convolutions, matrix products, attention, LSTM) it
 * also counts the floating-point operations from the nodes' shapes (2 per multiply-add) and the
 * rate they ran at, which says how far each is from this CPU's peak.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { readKernelEvents } from './ort-profile-events.js';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { top: { type: 'string', default: '15' } } });
const folder = positionals[0];
if (!folder) throw new Error('usage: ort-profile.ts <folder with the profiles> [--top 15]');

interface Total {
  microseconds: number;
  calls: number;
  /** Multiply-adds, for the operators `multiplyAdds` counts. */
  macs: number;
}

const byOperator = new Map<string, Total>();
const byNode = new Map<string, Total & { operator: string }>();
const files = readdirSync(folder).filter((name) => name.endsWith('.json'));
for (const file of files) {
  const session = path.basename(file, '.json').replace(/_\d{4}-.*$/, '');
  for (const event of readKernelEvents(path.join(folder, file))) {
    add(byOperator, event.operator, event.microseconds, multiplyAdds(event.operator, event.inputShapes, event.outputShapes));
    const node = `${session}/${event.node}`;
    const entry = byNode.get(node) ?? { microseconds: 0, calls: 0, macs: 0, operator: event.operator };
    entry.microseconds += event.microseconds;
    entry.calls += 1;
    byNode.set(node, entry);
  }
}

function add(totals: Map<string, Total>, key: string, microseconds: number, macs: number): void {
  const total = totals.get(key) ?? { microseconds: 0, calls: 0, macs: 0 };
  total.microseconds += microseconds;
  total.calls += 1;
  total.macs += macs;
  totals.set(key, total);
}

function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}

/**
 * A node's multiply-adds from the shapes ORT logs (the logical ones, before NCHWc blocking); 0 for
 * operators that only move or scale data. Weights ORT pre-packed are missing from a Gemm's inputs,
 * so its inner size comes from the input and its columns from the output.
 */
function multiplyAdds(operator: string, inputs: readonly (readonly number[])[], outputs: readonly (readonly number[])[]): number {
  const [input = [], weight = []] = inputs;
  const output = outputs[0] ?? [];
  switch (operator) {
    case 'Conv':
    case 'FusedConv': // weight [K, C/groups, kh, kw]: each output takes C/groups·kh·kw
      return weight.length > 0 ? (product(output) * product(weight)) / (weight[0] as number) : 0;
    case 'ConvTranspose': // weight [C, K/groups, kh, kw]: each input feeds K/groups·kh·kw
      return weight.length > 0 ? (product(input) * product(weight)) / (weight[0] as number) : 0;
    case 'Gemm':
    case 'MatMul':
    case 'FusedMatMul':
    case 'DynamicQuantizeMatMul': // int8 products count the same multiply-adds
    case 'MatMulIntegerToFloat':
    case 'MatMulInteger':
      return product(output) * (input.at(-1) ?? 0);
    case 'MultiHeadAttention': {
      // query [B, S, D], key [B, L, D]: Q·Kᵀ and P·V
      const key = inputs[1] ?? [];
      return 2 * product(input) * (key[1] ?? 0);
    }
    case 'LSTM': {
      // X [T, B, in], Y [T, dirs, B, H]: four gates per step over [x, h]
      const hidden = output.at(-1) ?? 0;
      return product(output) * 4 * ((input.at(-1) ?? 0) + hidden);
    }
    default:
      return 0;
  }
}

const all = [...byOperator.values()].reduce((sum, total) => sum + total.microseconds, 0);
const share = (microseconds: number) => `${((100 * microseconds) / all).toFixed(1)} %`;
console.log(`${files.length} profiles, ${(all / 1e6).toFixed(2)} s of node time`);
const gflop = (macs: number) => (2 * macs) / 1e9;
console.log('| operator | time | share | calls | GFLOP | GFLOP/s |');
console.log('|---|---:|---:|---:|---:|---:|');
for (const [operator, total] of [...byOperator].sort((a, b) => b[1].microseconds - a[1].microseconds)) {
  const arithmetic = total.macs > 0 ? `${gflop(total.macs).toFixed(1)} | ${(gflop(total.macs) / (total.microseconds / 1e6)).toFixed(0)}` : ' | ';
  console.log(`| ${operator} | ${(total.microseconds / 1e6).toFixed(2)} s | ${share(total.microseconds)} | ${total.calls} | ${arithmetic} |`);
}
const counted = [...byOperator.values()].filter((total) => total.macs > 0);
const countedTime = counted.reduce((sum, total) => sum + total.microseconds, 0);
const countedMacs = counted.reduce((sum, total) => sum + total.macs, 0);
console.log(
  `\narithmetic: ${gflop(countedMacs).toFixed(1)} GFLOP in ${(countedTime / 1e6).toFixed(2)} s (${share(countedTime)} of node time) at ` +
    `${(gflop(countedMacs) / (countedTime / 1e6)).toFixed(0)} GFLOP/s; everything else ${((all - countedTime) / 1e6).toFixed(2)} s`,
);
console.log(`\nthe ${values.top} slowest nodes`);
console.log('| node | operator | time | share |');
console.log('|---|---|---:|---:|');
for (const [node, total] of [...byNode].sort((a, b) => b[1].microseconds - a[1].microseconds).slice(0, Number(values.top))) {
  console.log(`| ${node} | ${total.operator} | ${(total.microseconds / 1e6).toFixed(2)} s | ${share(total.microseconds)} |`);
}
