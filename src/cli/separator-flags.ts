/**
 * python-audio-separator's spellings of the flags stemsplit shares with it, so its users' command
 * lines and scripts run unchanged (`--output_format FLAC --mdx_segment_size 256`). Listed once,
 * here: main.ts rewrites them before parsing and `split --help` lists them.
 */
export const SEPARATOR_FLAG_SPELLINGS: Readonly<Record<string, string>> = Object.freeze({
  '--model_filename': '--model',
  '--output_dir': '--output',
  '--output_format': '--format',
  '--sample_rate': '--sample-rate',
  '--single_stem': '--single-stem',
  '--ensemble_algorithm': '--ensemble',
  '--mdx_segment_size': '--mdx-segment-size',
  '--mdx_overlap': '--mdx-overlap',
  '--mdx_batch_size': '--mdx-batch-size',
  '--mdx_enable_denoise': '--mdx-denoise',
  '--demucs_shifts': '--shifts',
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
  const rows = Object.entries(SEPARATOR_FLAG_SPELLINGS).map(([theirs, ours]) => `  ${theirs.padEnd(22)} ${ours}`);
  return `\npython-audio-separator's spellings, taken as stemsplit's:\n${rows.join('\n')}\n`;
}
