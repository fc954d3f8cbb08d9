/**
 * python-audio-separator's VR separator settings (its `vr_params`: `--vr_batch_size`,
 * `--vr_window_size`, `--vr_aggression`, `--vr_enable_tta`, `--vr_enable_post_process`,
 * `--vr_post_process_threshold`, `--vr_high_end_process`), with its defaults.
 */
import type { FamilyOption } from '../contract/family.js';
import { checkOptionKeys } from '../contract/option-table.js';

export interface VrOptions {
  /** Windows per network run; does not change the result (masks are concatenated along time). */
  readonly batchSize: number;
  /** Frames per network window (UVR offers 320, 512, 1024). */
  readonly windowSize: number;
  /** −100…100: the mask's exponent (deeper extraction of the primary stem when larger). */
  readonly aggression: number;
  /** A second pass shifted by half a window, averaged with the first. */
  readonly enableTta: boolean;
  /** spec_utils.merge_artifacts on the mask. */
  readonly enablePostProcess: boolean;
  readonly postProcessThreshold: number;
  /** Mirror the input's highest bins into the output (high_end_process). */
  readonly highEndProcess: boolean;
  /** The secondary by UVR's spectral inversion of the mix and the primary, not (1 − mask)·X (separation/spectral-inversion.ts). */
  readonly invertSpect?: boolean;
}

export const VR_DEFAULTS: VrOptions = Object.freeze({
  batchSize: 1,
  windowSize: 512,
  aggression: 5,
  enableTta: false,
  enablePostProcess: false,
  postProcessThreshold: 0.2,
  highEndProcess: false,
});

/** Frames per window: UVR offers up to 1024; larger ones only cost memory. */
const MAX_WINDOW = 8192;

/** The VR family's options table (contract/family.ts): each row's key is a VrOptions field. */
export const VR_OPTION_TABLE: readonly FamilyOption[] = [
  {
    flags: '--vr-window-size <frames>',
    key: 'windowSize',
    type: 'integer',
    min: 1,
    max: MAX_WINDOW,
    separatorSpelling: '--vr_window_size',
    help: `UVR VR: spectrogram frames per network window, UVR offers 320, 512 or 1024 (default ${VR_DEFAULTS.windowSize})`,
  },
  {
    flags: '--vr-aggression <n>',
    key: 'aggression',
    type: 'integer',
    min: -100,
    max: 100,
    separatorSpelling: '--vr_aggression',
    help: `UVR VR: how deeply the primary stem is extracted (default ${VR_DEFAULTS.aggression})`,
  },
  {
    flags: '--vr-batch-size <n>',
    key: 'batchSize',
    type: 'integer',
    min: 1,
    separatorSpelling: '--vr_batch_size',
    help: `UVR VR: taken for python-audio-separator command lines; the stems do not depend on it (default ${VR_DEFAULTS.batchSize})`,
  },
  {
    flags: '--vr-enable-tta',
    key: 'enableTta',
    type: 'switch',
    separatorSpelling: '--vr_enable_tta',
    help: 'UVR VR: test-time augmentation, a second pass shifted by half a window, averaged (slower)',
  },
  { flags: '--tta', key: 'enableTta', type: 'switch', help: "UVR's own test-time augmentation, as --vr-enable-tta" },
  {
    flags: '--vr-enable-post-process',
    key: 'enablePostProcess',
    type: 'switch',
    separatorSpelling: '--vr_enable_post_process',
    help: "UVR VR: UVR's post-process, the mask pushed to the primary stem where it stays clean for a while",
  },
  {
    flags: '--vr-post-process-threshold <t>',
    key: 'postProcessThreshold',
    type: 'number',
    above: 0,
    below: 1,
    separatorSpelling: '--vr_post_process_threshold',
    help: `UVR VR: the post-process threshold (default ${VR_DEFAULTS.postProcessThreshold})`,
  },
  {
    flags: '--vr-high-end-process',
    key: 'highEndProcess',
    type: 'switch',
    separatorSpelling: '--vr_high_end_process',
    help: "UVR VR: mirror the input's highest frequencies into the stems",
  },
  {
    flags: '--invert-spect',
    key: 'invertSpect',
    type: 'switch',
    separatorSpelling: '--invert_spect',
    help: "UVR VR: the secondary stem by UVR's spectral inversion of the mix and the primary, not the mask's complement (UVR and python-audio-separator ignore it for VR)",
  },
];

/** The options merged over the defaults, each checked against the table (a USAGE error names its flag). */
export function vrOptions(options: Partial<VrOptions> = {}): VrOptions {
  checkOptionKeys(VR_OPTION_TABLE, options);
  return { ...VR_DEFAULTS, ...options };
}
