/**
 * Where a split runs: `--device auto|cpu|gpu` (STEMSPLIT_DEVICE) resolved against the adapters
 * this machine has. Knows nothing of ONNX Runtime: the worker pool hands the resolved provider to
 * its GPU workers, and onnx/session.ts opens their sessions on it.
 */
import { StemsplitError } from '../errors.js';
import { surveyAdapters, type AdapterSurvey, type GpuAdapter } from './adapters.js';

export { surveyAdapters, systemSurveyEnvironment, type AdapterSurvey, type GpuAdapter, type GpuProvider } from './adapters.js';

export const DEVICE_CHOICES = ['auto', 'cpu', 'gpu'] as const;
export type DeviceChoice = (typeof DEVICE_CHOICES)[number];
export const DEFAULT_DEVICE: DeviceChoice = 'auto';

/** What a split runs on: the CPU, or a GPU adapter through its provider. */
export type Device = { readonly kind: 'cpu' } | { readonly kind: 'gpu'; readonly adapter: GpuAdapter };
export const CPU: Device = Object.freeze({ kind: 'cpu' });

export function parseDeviceChoice(raw: string, name = '--device'): DeviceChoice {
  const value = raw.trim().toLowerCase();
  if ((DEVICE_CHOICES as readonly string[]).includes(value)) return value as DeviceChoice;
  throw new StemsplitError('USAGE', `${name} must be ${DEVICE_CHOICES.join(', ')}, got "${raw}"`);
}

/** The adapter `auto` takes: the first hardware one (Dawn prefers a discrete GPU the same way). */
export function autoAdapter(survey: AdapterSurvey): GpuAdapter | undefined {
  return survey.adapters.find((adapter) => !adapter.software);
}

/**
 * `auto`: a hardware adapter when there is one, else the CPU. `gpu`: any adapter, a software one
 * too (so lavapipe can stand in for a GPU); none at all is GPU_UNAVAILABLE naming what is missing.
 */
export function resolveDevice(choice: DeviceChoice, survey: AdapterSurvey = surveyAdapters()): Device {
  if (choice === 'cpu') return CPU;
  if (choice === 'auto') {
    const adapter = autoAdapter(survey);
    return adapter === undefined ? CPU : { kind: 'gpu', adapter };
  }
  const adapter = autoAdapter(survey) ?? survey.adapters[0];
  if (adapter === undefined) {
    const why = survey.missing.length > 0 ? survey.missing.join('; ') : 'no GPU adapter was found';
    throw new StemsplitError(
      'GPU_UNAVAILABLE',
      `--device gpu: no GPU to run on: ${why} (stemsplit devices lists what it finds; --device cpu or auto runs on the CPU)`,
    );
  }
  return { kind: 'gpu', adapter };
}

/** "GPU: llvmpipe (Vulkan, software)" or "CPU": what a split says it ran on. */
export function describeDevice(device: Device): string {
  if (device.kind === 'cpu') return 'CPU';
  const { adapter } = device;
  return `GPU: ${adapter.name} (${adapter.api}${adapter.software ? ', software' : ''})`;
}
