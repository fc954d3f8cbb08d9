/**
 * Seconds per minute of audio on the GPU against the CPU, per model, through the path users run:
 * `stemsplit models bench MODEL --device gpu` and `--device cpu` (a worker process, the model
 * loaded and warmed once, then a test song split), the two runs side by side for each model.
 *
 *   node --import tsx scripts/bench/gpu.ts [--seconds 30] [MODEL ...]
 *
 * MODEL: anything `--model` takes (a name, a checkpoint path); default: the bundled model and, where
 * ../shared/fixtures is present, one checkpoint of each family there (random weights: speed only).
 * Prints one row per model: GPU and CPU seconds per minute of audio and their ratio, with the
 * adapter and the load average. On a box with only a software adapter (lavapipe) the GPU column
 * times the GPU path, not a GPU.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const FIXTURES = resolve(ROOT, '../shared/fixtures');

const { values, positionals } = parseArgs({ options: { seconds: { type: 'string', default: '30' } }, allowPositionals: true });

/** One checkpoint of each family the shared fixtures hold, where they are present. */
function fixtureModels(): string[] {
  const candidates = [
    'demucs/htdemucs_small.th',
    'demucs-v3/hdemucs_mmi_m0.th',
    'demucs-v3/mdx_m0.th',
    'roformer/bs_roformer_vocals.ckpt',
    'roformer/mel_band_roformer_vocals.ckpt',
    'msst/scnet_4stem.ckpt',
    'msst/mdx23c_4stem.ckpt',
    'mdx/mdx_b_nfft4096_instrumental.onnx',
    'vr/vr_a_v50_1band_inst.pth',
  ];
  return candidates.map((file) => join(FIXTURES, file)).filter((path) => existsSync(path));
}

interface BenchRow {
  readonly secondsPerMinute: number;
  readonly device: string;
}

function bench(model: string, device: 'gpu' | 'cpu', dataDir: string): BenchRow | string {
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/run.ts', '--data-dir', dataDir, 'models', 'bench', model, '--device', device, '--seconds', values.seconds as string, '--json'],
    {
      cwd: ROOT,
      encoding: 'utf8',
    },
  );
  if (result.status !== 0) return (result.stderr.trim().split('\n').at(-1) ?? `exit ${result.status}`).slice(0, 120);
  const [row] = JSON.parse(result.stdout) as BenchRow[];
  return row as BenchRow;
}

const models = positionals.length > 0 ? positionals : ['4s', ...fixtureModels()];
const dataDir = mkdtempSync(join(tmpdir(), 'stemsplit-gpu-bench-'));
try {
  console.log(`| model | GPU s/min | CPU s/min | GPU speed-up | GPU adapter | load (1 min) |`);
  console.log(`|---|---|---|---|---|---|`);
  for (const model of models) {
    const gpu = bench(model, 'gpu', dataDir);
    const cpu = bench(model, 'cpu', dataDir);
    const cell = (row: BenchRow | string) => (typeof row === 'string' ? `failed: ${row}` : row.secondsPerMinute.toFixed(1));
    const ratio = typeof gpu === 'string' || typeof cpu === 'string' ? '—' : `${(cpu.secondsPerMinute / gpu.secondsPerMinute).toFixed(2)}×`;
    const name = model.startsWith(FIXTURES) ? model.slice(FIXTURES.length + 1) : model;
    console.log(`| ${name} | ${cell(gpu)} | ${cell(cpu)} | ${ratio} | ${typeof gpu === 'string' ? '—' : gpu.device} | ${loadavg()[0]?.toFixed(2)} |`);
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
