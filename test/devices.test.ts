/**
 * `--device auto|cpu|gpu`: the adapters found (Vulkan drivers and graphics devices on a described
 * file system), what each choice runs on, and the paths users run: `stemsplit devices`, `split`
 * with no adapter at all (VK_DRIVER_FILES naming no driver, as on a box without Vulkan), and with
 * this box's software Vulkan (lavapipe) where it is installed: a GPU that fails as it runs
 * (injected: no real GPU fails on demand) fails the CLI's split in one line, starts a pooled job
 * over on the CPU, and fails an API job with its credits refunded.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeSong } from './support/audio.js';
import { runCli } from './support/process.js';
import { interruptWhen } from './support/interrupt.js';
import { tempDir } from './support/temp-dir.js';
import { resolveDevice, surveyAdapters } from '../src/devices/index.js';
import type { SurveyEnvironment } from '../src/devices/adapters.js';
import { StemsplitError } from '../src/errors.js';
import { GPU_FAULT_ENV } from '../src/onnx/session.js';
import { gpuLane, workerSplitter } from '../src/split-worker/worker-pool.js';
import { startTestServer, uploadFile, waitForSplit, type TestServer } from './support/server.js';

/** A Linux box described by its files: each path's text, each folder's entries derived from the paths. */
function linuxBox(files: Record<string, string>, env: NodeJS.ProcessEnv = {}): SurveyEnvironment {
  return {
    platform: 'linux',
    env: { HOME: '/home/u', ...env },
    readText: (path) => files[path],
    listDir: (dir) => [
      ...new Set(
        Object.keys(files)
          .filter((path) => path.startsWith(`${dir}/`))
          .map((path) => path.slice(dir.length + 1).split('/')[0] as string),
      ),
    ],
    exists: (path) => path in files || Object.keys(files).some((file) => file.startsWith(`${path}/`)),
  };
}

const LOADER = { '/usr/lib/x86_64-linux-gnu/libvulkan.so.1': '' };
const LAVAPIPE = { '/usr/share/vulkan/icd.d/lvp_icd.json': JSON.stringify({ ICD: { library_path: 'libvulkan_lvp.so' } }) };
const NVIDIA_ICD = { '/usr/share/vulkan/icd.d/nvidia_icd.json': JSON.stringify({ ICD: { library_path: 'libGLX_nvidia.so.0' } }) };
const H200 = {
  '/sys/bus/pci/devices/0000:19:00.0/class': '0x030200\n',
  '/sys/bus/pci/devices/0000:19:00.0/vendor': '0x10de\n',
  '/sys/bus/pci/devices/0000:19:00.0/device': '0x2335\n',
  '/proc/driver/nvidia/gpus/0000:19:00.0/information': 'Model: \t\t NVIDIA H200\nIRQ: 42\n',
};
const RADEON = {
  '/sys/bus/pci/devices/0000:03:00.0/class': '0x030000\n',
  '/sys/bus/pci/devices/0000:03:00.0/vendor': '0x1002\n',
  '/sys/bus/pci/devices/0000:03:00.0/device': '0x73bf\n',
};

describe('the adapters a box has', () => {
  it('a hardware GPU with its driver comes before the software one, and auto takes it', () => {
    const survey = surveyAdapters(linuxBox({ ...LOADER, ...LAVAPIPE, ...NVIDIA_ICD, ...H200 }));
    assert.deepEqual(
      survey.adapters.map((adapter) => [adapter.name, adapter.software]),
      [
        ['NVIDIA H200', false],
        ['llvmpipe', true],
      ],
    );
    assert.deepEqual(resolveDevice('auto', survey), { kind: 'gpu', adapter: survey.adapters[0] });
    assert.deepEqual(resolveDevice('gpu', survey), { kind: 'gpu', adapter: survey.adapters[0] });
    assert.deepEqual(resolveDevice('cpu', survey), { kind: 'cpu' });
  });

  it('only a software adapter: auto runs on the CPU, gpu on the software adapter', () => {
    const survey = surveyAdapters(linuxBox({ ...LOADER, ...LAVAPIPE }));
    assert.equal(resolveDevice('auto', survey).kind, 'cpu');
    const gpu = resolveDevice('gpu', survey);
    assert.equal(gpu.kind === 'gpu' && gpu.adapter.name, 'llvmpipe');
  });

  it('a GPU without its Vulkan driver is named as missing, and gpu fails saying so (exit 17)', () => {
    const survey = surveyAdapters(linuxBox({ ...LOADER, ...RADEON }));
    assert.deepEqual(survey.adapters, []);
    assert.match(survey.missing.join('\n'), /AMD GPU 1002:73bf has no Vulkan driver installed/);
    assert.throws(
      () => resolveDevice('gpu', survey),
      (error: unknown) =>
        error instanceof StemsplitError &&
        error.code === 'GPU_UNAVAILABLE' &&
        error.exitCode === 17 &&
        /AMD GPU 1002:73bf has no Vulkan driver/.test(error.message),
    );
    assert.equal(resolveDevice('auto', survey).kind, 'cpu');
  });

  it('no Vulkan loader: nothing else matters, and the line says what to install', () => {
    const survey = surveyAdapters(linuxBox({ ...LAVAPIPE, ...NVIDIA_ICD, ...H200 }));
    assert.deepEqual(survey.adapters, []);
    assert.match(survey.missing[0] ?? '', /no Vulkan loader \(libvulkan\.so\.1; .*libvulkan1\)/);
  });

  it('VK_DRIVER_FILES replaces the search for drivers, as the Vulkan loader does', () => {
    const box = {
      ...LOADER,
      ...LAVAPIPE,
      ...NVIDIA_ICD,
      ...H200,
      '/opt/only/lvp.json': JSON.stringify({ ICD: { library_path: '/opt/only/libvulkan_lvp.so' } }),
    };
    const survey = surveyAdapters(linuxBox(box, { VK_DRIVER_FILES: '/opt/only/lvp.json' }));
    assert.deepEqual(
      survey.adapters.map((adapter) => adapter.name),
      ['llvmpipe'],
    );
    assert.match(survey.missing.join('\n'), /NVIDIA H200 has no Vulkan driver/);
  });
});

/** A 2 s song in `dir`: the GPU path on lavapipe is slow, so the songs are short. */
function twoSecondSong(dir: string): string {
  const song = join(dir, 'song.wav');
  writeSong(song, 2);
  return song;
}

/** A box with no Vulkan driver at all, for the CLI: the loader finds none, and so does stemsplit. */
const NO_DRIVER = { VK_DRIVER_FILES: '/nonexistent/stemsplit-test-icd.json', STEMSPLIT_DEVICE: '' };

describe('the CLI where there is no adapter', () => {
  const dir = tempDir();
  const song = twoSecondSong(dir);

  it('devices says there is none, auto runs on the CPU, gpu fails', () => {
    const result = runCli(['devices', '--json'], NO_DRIVER);
    assert.equal(result.status, 0, result.stderr);
    const listed = JSON.parse(result.stdout) as { adapters: unknown[]; auto: string; gpu: string | null };
    assert.deepEqual([listed.adapters, listed.auto, listed.gpu], [[], 'CPU', null]);
  });

  it('split --device gpu is one line naming what is missing, exit 17, nothing written', () => {
    const out = join(dir, 'gpu-out');
    const result = runCli(['--data-dir', join(dir, 'data'), 'split', song, '-o', out, '--device', 'gpu'], NO_DRIVER);
    assert.equal(result.status, 17, result.stderr);
    const lines = result.stderr.trim().split('\n');
    assert.equal(lines.length, 1, result.stderr);
    assert.match(lines[0] ?? '', /^stemsplit: --device gpu: no GPU to run on: no Vulkan driver is installed .*\(stemsplit devices lists what it finds/);
    assert.equal(existsSync(out), false);
  });

  it('STEMSPLIT_DEVICE=gpu is the same as the flag', () => {
    const result = runCli(['--data-dir', join(dir, 'data'), 'split', song, '-o', join(dir, 'env-out')], { ...NO_DRIVER, STEMSPLIT_DEVICE: 'gpu' });
    assert.equal(result.status, 17, result.stderr);
  });

  it('split --device auto runs on the CPU and says so', () => {
    const result = runCli(['--data-dir', join(dir, 'data'), 'split', song, '-o', join(dir, 'auto-out'), '--device', 'auto', '--json'], NO_DRIVER);
    assert.equal(result.status, 0, result.stderr);
    assert.match(result.stderr, /^Loaded model \S+ \(terms of its weights: .*\), on CPU$/m);
    assert.equal((JSON.parse(result.stdout) as { device: string }).device, 'CPU');
  });

  it('int8 runs on the CPU only: --device gpu with it is a usage error, auto keeps to the CPU', async () => {
    const { deviceSplitter } = await import('../src/split-worker/worker-pool.js');
    const data = { cacheDir: join(dir, 'cache'), intraOpThreads: 1, precision: 'int8' as const };
    assert.throws(
      () => deviceSplitter(data, 1, { choice: 'gpu', gpuWorkers: 1 }),
      (error: unknown) => error instanceof StemsplitError && error.code === 'USAGE' && /--precision int8 runs on the CPU only/.test(error.message),
    );
    const auto = deviceSplitter(data, 1, { choice: 'auto', gpuWorkers: 1 });
    assert.deepEqual(auto.devices, ['CPU']);
    await auto.close();
  });

  it('a device that is not one is a usage error (exit 2)', () => {
    const result = runCli(['split', song, '--device', 'tpu']);
    assert.equal(result.status, 2);
    assert.match(result.stderr, /--device must be auto, cpu, gpu, got "tpu"/);
  });
});

const software = surveyAdapters().adapters.find((adapter) => adapter.software);
const noSoftwareGpu =
  software === undefined ? 'no software Vulkan adapter here (Debian: mesa-vulkan-drivers from bookworm-backports; .ci/run installs it)' : false;

describe('a GPU that fails as it runs (lavapipe, the failure injected)', { skip: noSoftwareGpu }, () => {
  const dir = tempDir();
  const song = twoSecondSong(dir);

  it('split --device gpu fails in one line (exit 17) and leaves no stems', () => {
    const out = join(dir, 'lost');
    const result = runCli(['--data-dir', join(dir, 'data'), 'split', song, '-o', out, '--device', 'gpu'], { [GPU_FAULT_ENV]: 'lost', STEMSPLIT_DEVICE: '' });
    assert.equal(result.status, 17, result.stderr);
    const errors = result.stderr.split('\n').filter((line) => line.startsWith('stemsplit:'));
    assert.deepEqual(errors.length, 1, result.stderr);
    assert.match(errors[0] ?? '', /the GPU failed as it ran: the device was lost/);
    assert.deepEqual(existsSync(out) ? readdirSync(out).flatMap((track) => readdirSync(join(out, track))) : [], []);
  });

  it('Ctrl-C mid-split on the GPU stops within 2 s (a software GPU chunk takes longer: its worker is ended)', async (t) => {
    const long = join(dir, 'long.wav');
    writeSong(long, 20);
    const out = join(dir, 'cancelled');
    const args = ['--data-dir', join(dir, 'data'), 'split', long, '-o', out, '--device', 'gpu'];
    const { code, seconds, stderr } = await interruptWhen(args, { STEMSPLIT_DEVICE: '' }, (printed) => /separate/.test(printed), 'the split on the GPU');
    t.diagnostic(`stopped in ${seconds.toFixed(2)} s`);
    assert.equal(code, 130, stderr);
    assert.ok(seconds <= 2, `stopping took ${seconds.toFixed(2)} s`);
    assert.match(stderr, /stopped by SIGINT; nothing was written for long/);
    assert.deepEqual(existsSync(join(out, 'long')) ? readdirSync(join(out, 'long')) : [], []);
  });

  it('a pool with CPU workers beside the GPU starts the job over on the CPU, saying why', async () => {
    process.env[GPU_FAULT_ENV] = 'lost';
    const lane = gpuLane('gpu', 1);
    assert.ok(lane);
    const splitter = workerSplitter({ cacheDir: join(dir, 'cache'), intraOpThreads: 1 }, 1, { ...lane, only: false });
    const loaded: Array<[string, string | undefined]> = [];
    try {
      assert.deepEqual(splitter.devices, ['GPU: llvmpipe (Vulkan, software)', 'CPU']);
      const { registryFor } = await import('../src/models/registry.js');
      const { resolveConfig } = await import('../src/config.js');
      const model = registryFor(resolveConfig({ dataDir: join(dir, 'data') }, {})).resolve('4s');
      const outDir = join(dir, 'pool-out');
      const result = await splitter.split(
        { inputPath: song, model, outDir, format: 'wav' },
        () => undefined,
        undefined,
        (device, why) => loaded.push([device, why]),
      );
      assert.equal(result.device, 'CPU');
      assert.deepEqual(
        loaded.map(([device]) => device),
        ['GPU: llvmpipe (Vulkan, software)', 'CPU', 'CPU'],
      );
      assert.match(loaded[1]?.[1] ?? '', /the GPU failed as it ran: the device was lost/);
      assert.deepEqual(readdirSync(outDir).sort(), ['bass.wav', 'drums.wav', 'other.wav', 'vocals.wav']);
    } finally {
      delete process.env[GPU_FAULT_ENV];
      await splitter.close();
    }
  });
});

describe('the API with --device gpu (lavapipe)', { skip: noSoftwareGpu }, () => {
  let t: TestServer;
  let song: Buffer;
  before(async () => {
    song = readFileSync(twoSecondSong(tempDir()));
    t = await startTestServer({ device: 'gpu' });
  });
  after(() => t?.close());

  it('GET /v1/models says what jobs run on', async () => {
    const reply = await t.request('GET', '/models');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json.data.devices, ['GPU: llvmpipe (Vulkan, software)']);
  });

  it('a job runs on the GPU and says so', async () => {
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    assert.equal(created.status, 200, created.text);
    const id = created.json.data.id;
    const done = (await waitForSplit(t, id, 300_000)).json as { data: { status: string; device: string | null } };
    assert.deepEqual([done.data.status, done.data.device], ['succeeded', 'GPU: llvmpipe (Vulkan, software)']);
  });
});

describe('the API when the GPU is lost mid-job (lavapipe, the failure injected)', { skip: noSoftwareGpu }, () => {
  let t: TestServer;
  let song: Buffer;
  before(async () => {
    song = readFileSync(twoSecondSong(tempDir()));
    // Its workers start with the fault in their environment, at the first job.
    process.env[GPU_FAULT_ENV] = 'lost';
    t = await startTestServer({ device: 'gpu' });
  });
  after(async () => {
    delete process.env[GPU_FAULT_ENV];
    await t?.close();
  });

  it('fails the job with its credits refunded, and the server goes on', async () => {
    const balance = async () => (await t.request('GET', '/credits')).json.data.balance as number;
    const before = await balance();
    const input = await uploadFile(t, song);
    const created = await t.request('POST', '/audio/splits', { body: { input, stemModel: '4s' } });
    assert.equal(created.status, 200, created.text);
    const id = created.json.data.id;
    const done = (await waitForSplit(t, id, 300_000)).json as { data: { status: string; error: { code: string; message: string } | null } };
    assert.equal(done.data.status, 'failed');
    assert.equal(done.data.error?.code, 'SEPARATION_FAILED');
    assert.match(done.data.error?.message ?? '', /the GPU failed as it ran: the device was lost/);
    assert.equal(await balance(), before);
    assert.equal((await t.request('GET', '/health')).status, 200);
  });
});
