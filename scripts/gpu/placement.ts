/**
 * Which ONNX operators each family runs on the GPU and which ONNX Runtime leaves to the CPU (the
 * WebGPU provider lacks a kernel for them, or ORT keeps small shape computations on the CPU):
 *
 *   XDG_RUNTIME_DIR=/tmp/xdg node --import tsx scripts/gpu/placement.ts [--family REGEX] [--shared ../shared]
 *
 * Splits a 1 s song with each family's shared fixture (and the bundled model) through the real CLI
 * with `--device gpu` and ONNX Runtime's verbose log (STEMSPLIT_ORT_LOG_SEVERITY=0, src/onnx/session.ts),
 * where ORT writes, for every session it opens, which provider took each node ("Node placements").
 * Prints a markdown table per family: each operator type with its nodes on the GPU and on the CPU,
 * summed over the family's graphs (as ORT optimised them: fused nodes count as one; where ORT puts
 * a whole session on the GPU it names no node, and the graph it wrote, STEMSPLIT_ORT_OPTIMIZED_DIR,
 * does). MemcpyToHost / MemcpyFromHost are the copies ORT inserts
 * between the two.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeSong } from '../../test/support/audio.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { graphOf, readGraph } from '../../src/onnx/model-proto.js';

const { values } = parseArgs({ options: { family: { type: 'string', default: '.' }, shared: { type: 'string', default: path.join('..', 'shared') } } });
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const fixtures = path.resolve(ROOT, values.shared as string, 'fixtures');

/** Each family's model as `--model` takes it: a fixture file (its yaml or data beside it), or a bundled name. */
const FAMILIES: readonly (readonly [family: string, model: string])[] = [
  ['HTDemucs', 'demucs/htdemucs_small.th'],
  ['HDemucs (Demucs v3)', 'demucs-v3/hdemucs_mmi_small.yaml'],
  ['Demucs v2 (diffq)', 'demucs-v3/mdx_m1.th'],
  ['BS-RoFormer', 'roformer/bs_roformer_vocals.ckpt'],
  ['Mel-Band RoFormer', 'roformer/mel_band_roformer_vocals.ckpt'],
  ['SCNet', 'msst/scnet_2stem.ckpt'],
  ['MDX23C', 'msst/mdx23c_2stem.ckpt'],
  ['MDX-Net', 'mdx/mdx_a_nfft6144_vocals.onnx'],
  ['VR', 'vr/vr_c_v51_4band_v3_noecho_tta.pth'],
  ['bundled', 'bundled-4s'],
];

/** Nodes per operator type per provider, summed over sessions. */
interface Placement {
  sessions: number;
  /** Nodes of sessions ORT put wholly on the GPU, which it does not name. */
  unlistedGpuNodes: number;
  readonly byOp: Map<string, { gpu: number; cpu: number }>;
}

/**
 * ORT's verbose lines after "Node placements": " All nodes placed on [EP]. Number of nodes: N"
 * (nothing listed), or per provider " Node(s) placed on [EP]. Number of nodes: N" followed by
 * "  OpType (node name)" lines.
 */
function parsePlacements(log: string): Placement {
  const placement: Placement = { sessions: 0, unlistedGpuNodes: 0, byOp: new Map() };
  let provider: string | undefined;
  for (const raw of log.split('\n')) {
    const line = raw.replace(/^.*?VerifyEachNodeIsAssignedToAnEp\]/, '');
    if (line === raw) {
      provider = undefined;
      continue;
    }
    if (/^\s*Node placements/.test(line)) {
      placement.sessions += 1;
      continue;
    }
    const all = /^\s*All nodes placed on \[(\w+)\]\. Number of nodes: (\d+)/.exec(line);
    if (all) {
      // ORT names no node then: the session's optimised graph does (withOptimizedGraphs).
      if (all[1] !== 'CPUExecutionProvider') placement.unlistedGpuNodes += Number(all[2]);
      else count(placement, '(unnamed)', all[1] as string, Number(all[2]));
      continue;
    }
    const on = /^\s*Node\(s\) placed on \[(\w+)\]/.exec(line);
    if (on) {
      provider = on[1];
      continue;
    }
    const node = /^\s{2,}(\S+) \(/.exec(line);
    if (node && provider) count(placement, node[1] as string, provider, 1);
  }
  return placement;
}

function count(placement: Placement, op: string, provider: string, n: number): void {
  const entry = placement.byOp.get(op) ?? { gpu: 0, cpu: 0 };
  if (provider === 'CPUExecutionProvider') entry.cpu += n;
  else entry.gpu += n;
  placement.byOp.set(op, entry);
}

/**
 * Names the nodes of the sessions ORT put wholly on the GPU from the graphs as ORT optimised them
 * (every session's, written by STEMSPLIT_ORT_OPTIMIZED_DIR): per operator, its nodes in those
 * graphs less the ones ORT named on either provider are the unnamed GPU ones.
 */
function withOptimizedGraphs(placement: Placement, dir: string): Placement {
  if (placement.unlistedGpuNodes === 0) return placement;
  const inGraphs = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.onnx'))) {
    for (const node of readGraph(graphOf(readFileSync(path.join(dir, file)))).nodes) inGraphs.set(node.opType, (inGraphs.get(node.opType) ?? 0) + 1);
  }
  const byOp = new Map([...placement.byOp].map(([op, n]) => [op, { ...n }]));
  let named = 0;
  for (const [op, total] of inGraphs) {
    const entry = byOp.get(op) ?? { gpu: 0, cpu: 0 };
    const unlisted = Math.max(0, total - entry.gpu - entry.cpu);
    entry.gpu += unlisted;
    named += unlisted;
    byOp.set(op, entry);
  }
  if (named !== placement.unlistedGpuNodes)
    console.log(`(the optimised graphs name ${named} of the ${placement.unlistedGpuNodes} nodes ORT placed on the GPU without naming them)\n`);
  return { sessions: placement.sessions, unlistedGpuNodes: 0, byOp };
}

function table(placement: Placement): string {
  const rows = [...placement.byOp.entries()].sort(([a, x], [b, y]) => y.cpu - x.cpu || y.gpu - x.gpu || a.localeCompare(b));
  const total = rows.reduce((sum, [, n]) => ({ gpu: sum.gpu + n.gpu, cpu: sum.cpu + n.cpu }), { gpu: 0, cpu: 0 });
  return [
    '| operator | nodes on the GPU | nodes on the CPU |',
    '|---|--:|--:|',
    ...rows.map(([op, n]) => `| ${op} | ${n.gpu} | ${n.cpu} |`),
    `| **all** | **${total.gpu}** | **${total.cpu}** |`,
  ].join('\n');
}

function main(): void {
  if (!existsSync(fixtures)) throw new Error(`${fixtures} is missing (--shared names the folder holding fixtures/)`);
  const work = tempDir('stemsplit-placement-');
  const song = path.join(work, 'song.wav');
  writeSong(song, 1);
  const pattern = new RegExp(values.family as string, 'i');
  console.log(`# ${new Date().toISOString()}, ${hostname()}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}\n`);
  for (const [family, model] of FAMILIES) {
    if (!pattern.test(family)) continue;
    const modelArg = model.includes('/') ? path.join(fixtures, model) : model;
    const out = path.join(work, family.replace(/\W+/g, '-'));
    const optimized = path.join(out, 'optimized');
    mkdirSync(optimized, { recursive: true });
    const started = Date.now();
    const result = spawnSync(
      process.execPath,
      ['--import', 'tsx', 'src/cli/run.ts', 'split', song, '--model', modelArg, '--device', 'gpu', '--format', 'wav', '-o', path.join(out, 'stems')],
      {
        cwd: ROOT,
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        env: {
          ...process.env,
          STEMSPLIT_ORT_LOG_SEVERITY: '0',
          STEMSPLIT_ORT_OPTIMIZED_DIR: optimized,
          STEMSPLIT_DATA_DIR: path.join(work, 'data'),
          STEMSPLIT_CACHE_DIR: path.join(work, 'cache'),
        },
      },
    );
    const device = /, on (GPU: .*|CPU)$/m.exec(result.stderr)?.[1] ?? '?';
    console.log(`## ${family} (\`--model ${model}\`, on ${device}, ${((Date.now() - started) / 1000).toFixed(0)} s)\n`);
    if (result.status !== 0) {
      const error = result.stderr
        .split('\n')
        .filter((line) => line.startsWith('stemsplit:'))
        .join(' ');
      console.log(`split failed (exit ${result.status}): ${error}\n`);
      continue;
    }
    const placement = withOptimizedGraphs(parsePlacements(result.stderr), optimized);
    console.log(`${placement.sessions} ONNX Runtime session(s)\n\n${table(placement)}\n`);
  }
}

main();
