/** The options and value parsers more than one command declares (cli/program.ts, cli/split-declaration.ts). */
import { Option } from 'commander';
import { ENV } from '../config.js';
import { StemsplitError } from '../errors.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, ENSEMBLE_ALGORITHMS } from '../ensemble/algorithms.js';
import { parsePrecision, PRECISIONS } from '../onnx/quantize.js';
import { DEFAULT_DEVICE, DEVICE_CHOICES, parseDeviceChoice } from '../devices/index.js';

/** A repeatable option's values, in the order given. */
export function collect(value: string, previous: readonly string[]): string[] {
  return [...previous, value];
}

export function integer(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^\d+$/.test(value) || n < min || n > max) throw new StemsplitError('USAGE', `${name} must be a whole number from ${min} to ${max}, got "${value}"`);
    return n;
  };
}

/** `--device`, the same for split, serve, worker and models bench (its variable when not given). */
export function deviceOption(): Option {
  return new Option(
    '--device <device>',
    `where models run: ${DEVICE_CHOICES.join(', ')} (auto: a hardware GPU when there is one, else the CPU; gpu: the GPU, a software one too; stemsplit devices lists them; default ${DEFAULT_DEVICE})`,
  )
    .env(ENV.device)
    .argParser((value) => parseDeviceChoice(value));
}

/** `--precision`, the same for split, serve and worker (its variable when not given). */
export function precisionOption(): Option {
  return new Option(
    '--precision <precision>',
    `what models compute in: ${PRECISIONS.join(' or ')} (int8: Demucs, faster at ≥ 40 dB SNR against fp32; models that fall short are refused saying why, as models list shows; docs/benchmarks.md)`,
  )
    .env(ENV.precision)
    .argParser((value) => parsePrecision(value));
}

/**
 * `--ensemble` and `--ensemble-weights`, the same for split, serve and worker: how an ensemble's
 * stems are combined (ensemble/algorithms.ts `parseEnsembleMethod` checks both, on each command).
 */
export function ensembleOption(): Option {
  return new Option(
    '--ensemble <algorithm>',
    `how an ensemble's stems are combined: ${ENSEMBLE_ALGORITHMS.join(', ')} (default ${DEFAULT_ENSEMBLE_ALGORITHM}; python-audio-separator's names)`,
  );
}

/** `weightsFor`: what each weight is given for on that command. */
export function ensembleWeightsOption(weightsFor: string): Option {
  return new Option('--ensemble-weights <weights>', `one weight per ${weightsFor}, e.g. 3,1 (avg_wave and avg_fft; default equal)`);
}
