/** `stemsplit devices`: the GPU adapters this machine has, and where `--device auto` and `gpu` would run. */
import { autoAdapter, describeDevice, resolveDevice, surveyAdapters, type Device } from '../../devices/index.js';
import { describeError } from '../../errors.js';
import { print, printJson, type CommandContext } from '../context.js';

export interface DevicesOptions {
  readonly check?: boolean;
  readonly json?: boolean;
}

export async function devicesCommand(ctx: CommandContext, options: DevicesOptions): Promise<void> {
  const survey = surveyAdapters();
  const auto = resolveDevice('auto', survey);
  const gpu = survey.adapters.length > 0 ? resolveDevice('gpu', survey) : undefined;
  const check = options.check && gpu?.kind === 'gpu' ? await checkOn(gpu) : undefined;
  if (options.json) {
    printJson(ctx, {
      adapters: survey.adapters,
      missing: survey.missing,
      auto: describeDevice(auto),
      gpu: gpu === undefined ? null : describeDevice(gpu),
      ...(check === undefined ? {} : { check }),
      chosen: describeDevice(resolveDevice(ctx.config.device, survey)),
    });
    return;
  }
  if (survey.adapters.length === 0) print(ctx, 'No GPU adapter found.');
  for (const adapter of survey.adapters) {
    print(ctx, `${adapter.name}\t${adapter.api}, ${adapter.software ? 'software (runs on the CPU)' : 'hardware'}, ONNX Runtime's ${adapter.provider} provider`);
  }
  for (const line of survey.missing) print(ctx, `missing: ${line}`);
  const autoWhy = auto.kind === 'cpu' && survey.adapters.length > 0 ? ' (only software adapters: they are slower than the CPU provider)' : '';
  print(ctx, `--device auto runs on ${describeDevice(auto)}${autoWhy}`);
  print(ctx, gpu === undefined ? '--device gpu fails: there is no adapter' : `--device gpu runs on ${describeDevice(gpu)}`);
  if (check !== undefined) {
    print(
      ctx,
      check.ok
        ? `check: ${describeDevice(gpu as Device)} ran a test graph in ${check.milliseconds} ms, ${check.agreementDb} dB from the CPU's answer`
        : `check: the GPU failed: ${check.error}`,
    );
  }
  if (!autoAdapter(survey) && !survey.adapters.some((adapter) => adapter.software)) {
    print(ctx, 'for a software GPU (to try --device gpu): Debian/Ubuntu: apt install mesa-vulkan-drivers (Mesa 24 or later)');
  }
}

async function checkOn(device: Device & { kind: 'gpu' }): Promise<{ ok: true; milliseconds: number; agreementDb: number } | { ok: false; error: string }> {
  const { checkGpu } = await import('../../onnx/gpu-check.js');
  try {
    const result = await checkGpu(device.adapter.provider);
    return { ok: true, milliseconds: Math.round(result.milliseconds), agreementDb: Math.round(result.agreementDb * 10) / 10 };
  } catch (error) {
    return { ok: false, error: describeError(error) };
  }
}
