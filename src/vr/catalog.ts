/**
 * UVR's VR-architecture task models (`.pth`): karaoke, de-echo/de-reverb, denoise.
 */
import type { CatalogModel } from '../contract/family.js';
import { SEPARATOR_SCORES, uvrRepositoryFile } from '../uvr/sources.js';

export interface VrCatalogModel extends CatalogModel {
  /** The key of its model data in UVR's table (the VR engine's), which pull checks. */
  readonly uvrHash?: string;
}

/**
 * UVR's VR-architecture task models (`.pth`): karaoke, de-echo/de-reverb, denoise. Their model
 * data is in the VR engine's table under the UVR key, which pull checks.
 */
export const VR_CATALOG: readonly VrCatalogModel[] = (
  [
    [
      '5-hp-karaoke-uvr',
      '5_HP-Karaoke-UVR',
      'f6ea8473ff86017b5ebd586ccacf156b',
      ['instrumental', 'vocals'],
      `UVR's 5_HP-Karaoke-UVR (VR 5.0), the instrumental with the backing vocals + the lead vocals; instrumental SDR 12.22 in ${SEPARATOR_SCORES}`,
    ],
    [
      '6-hp-karaoke-uvr',
      '6_HP-Karaoke-UVR',
      '6b5916069a49be3fe29d4397ecfd73fa',
      ['instrumental', 'vocals'],
      `UVR's 6_HP-Karaoke-UVR (VR 5.0), the instrumental with the backing vocals + the lead vocals; instrumental SDR 12.97 in ${SEPARATOR_SCORES}`,
    ],
    [
      'uvr-deecho-dereverb',
      'UVR-DeEcho-DeReverb',
      '0fb9249ffe4ffc38d7b16243f394c0ff',
      ['no_reverb', 'reverb'],
      "FoxJoy's UVR-DeEcho-DeReverb (VR 5.1), the dry signal (no_reverb: echo and reverb taken out) + the reverb",
    ],
    [
      'uvr-de-echo-normal',
      'UVR-De-Echo-Normal',
      'f200a145434efc7dcf0cd093f517ed52',
      ['no_echo', 'echo'],
      "FoxJoy's UVR-De-Echo-Normal (VR 5.1), the signal without its echo (no_echo) + the echo",
    ],
    [
      'uvr-de-echo-aggressive',
      'UVR-De-Echo-Aggressive',
      '6857b2972e1754913aad0c9a1678c753',
      ['no_echo', 'echo'],
      "FoxJoy's UVR-De-Echo-Aggressive (VR 5.1), the signal without its echo (no_echo) + the echo, taken out more deeply than Normal",
    ],
    [
      'uvr-denoise',
      'UVR-DeNoise',
      '44c55d8b5d2e3edea98c2b2bf93071c7',
      ['noise', 'no_noise'],
      "FoxJoy's UVR-DeNoise (VR 5.1), the noise + the denoised signal (no_noise)",
    ],
    [
      'uvr-denoise-lite',
      'UVR-DeNoise-Lite',
      '51ea8c43a6928ed3c10ef5cb2707d57b',
      ['noise', 'no_noise'],
      "FoxJoy's UVR-DeNoise-Lite (VR 5.1, a small network), the noise + the denoised signal (no_noise)",
    ],
  ] as const
).map(([name, file, uvrHash, sources, description]) => uvrVr({ name, description, sources, file: `${file}.pth`, uvrHash }));

/** A UVR VR `.pth` from UVR's repository (UVR's terms), checked by its UVR key at pull. */
function uvrVr(entry: Pick<VrCatalogModel, 'name' | 'description' | 'sources'> & { readonly file: string; readonly uvrHash: string }): VrCatalogModel {
  const { file, ...rest } = entry;
  return { ...rest, family: 'vr', ...uvrRepositoryFile(file) };
}
