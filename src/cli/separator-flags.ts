/**
 * python-audio-separator's spellings of the flags stemsplit shares with it, so its users' command
 * lines and scripts run unchanged (`--output_format FLAC --mdx_segment_size 256`). Listed once:
 * the general flags here, a family's in its options table (contract/family.ts); main.ts rewrites them
 * before parsing and `split --help` lists them.
 */
import { familyFlags } from '../models/families.js';
import { flagName } from '../contract/family.js';

export const SEPARATOR_FLAG_SPELLINGS: Readonly<Record<string, string>> = Object.freeze({
  '--model_filename': '--model',
  '--output_dir': '--output',
  '--output_format': '--format',
  '--output_bitrate': '--bitrate',
  '--normalization': '--normalize',
  '--sample_rate': '--sample-rate',
  '--single_stem': '--single-stem',
  '--ensemble_algorithm': '--ensemble',
  ...Object.fromEntries(familyFlags().flatMap(({ flags, separatorSpelling }) => (separatorSpelling ? [[separatorSpelling, flagName(flags)]] : []))),
});

/** `argv` with python-audio-separator's spellings (also as `--flag=value`) turned into stemsplit's; everything after `--` is left alone. */
export function withSeparatorSpellings(argv: readonly string[]): string[] {
  const end = argv.indexOf('--');
  return argv.map((arg, index) => {
    if (end >= 0 && index > end) return arg;
    const [flag = '', ...value] = arg.split('=');
    const ours = SEPARATOR_FLAG_SPELLINGS[flag];
    return ours === undefined ? arg : [ours, ...value].join('=');
  });
}

/** The lines `split --help` ends with. */
export function separatorSpellingsHelp(): string {
  const width = Math.max(...Object.keys(SEPARATOR_FLAG_SPELLINGS).map((theirs) => theirs.length));
  const rows = Object.entries(SEPARATOR_FLAG_SPELLINGS).map(([theirs, ours]) => `  ${theirs.padEnd(width)}  ${ours}`);
  return `\npython-audio-separator's spellings, taken as stemsplit's:\n${rows.join('\n')}\n`;
}
