/** `split`'s declaration: its arguments and flags, each family's from its options table (the action is cli/program.ts's). */
import { Option, type Command } from 'commander';
import { DEFAULT_STEM_FORMAT, lossyFormats, STEM_FORMAT_INFO, STEM_FORMATS } from '../audio/formats.js';
import { CLIP_MODES, DEFAULT_CLIP_MODE, DEFAULT_NORMALIZE_PEAK } from '../audio/levels.js';
import { familyFilesInWords, familyFlags, MODEL_FAMILIES } from '../models/families.js';
import { collect, deviceOption, ensembleOption, ensembleWeightsOption, precisionOption } from './options.js';
import { separatorSpellingsHelp } from './separator-flags.js';

/** `stemsplit split`, declared on `program`. */
export function declareSplit(program: Command): Command {
  const split = program
    .command('split')
    .description('split audio files into stems on this machine (no server, no credits)')
    .argument('<files...>', 'audio files (mp3, wav, flac, m4a, webm, …)')
    .addOption(
      new Option(
        '-m, --model <model>',
        `4s, 6s, a model name (see models list) or a path to ${familyFilesInWords()}; give it again (or join names with +) to ensemble several`,
      )
        .argParser(collect)
        .default([] as string[], '4s'),
    )
    .addOption(ensembleOption())
    .addOption(ensembleWeightsOption('--model, in order'))
    .option('--preset <name>', "run a named ensemble instead of --model/--ensemble: python-audio-separator's presets or your own (stemsplit presets list)")
    .option('--model-config <file>', `the config of one of the ${configTakers()} (default: the one beside its file)`)
    .addOption(
      new Option(
        '--then <input=model>',
        'chain another model after --model: split the stem <input> an earlier step made with <model> (a name, a path, or A+B); its stems are named <input>-<stem>; repeatable, e.g. --then vocals=karaoke.ckpt',
      )
        .argParser(collect)
        .default([] as string[], 'none'),
    )
    .option(
      '--chain <file>',
      'run the chain in this recipe (JSON or YAML: a list of steps, {model} then {input, model}; see docs/workflows.md) instead of --model/--then',
    )
    .option('--keep-intermediate', 'a chain also writes the stems its later steps split (default: only the ones no step split)');
  // Each family's options, declared in its options table (contract/family.ts).
  // A family's `--no-…` switch is a switch of its own (`noSplit`), not commander's negation of a `--split`.
  for (const { flags, description } of familyFlags()) split.addOption(Object.assign(new Option(flags, description), { negate: false }));
  return split
    .option('--two-stems <stem>', 'write <stem> and no_<stem> (the sum of the others), e.g. vocals for karaoke')
    .option('--single-stem <stem>', 'write only this stem: one the model writes, or no_<stem> (the sum of the others), e.g. no_vocals for an instrumental')
    .option('-o, --output <dir>', 'output folder; stems go to <dir>/<track>/<stem>.<ext> (see --filename)', 'separated')
    .option(
      '--filename <template>',
      'where each stem goes under -o, from {track}, {stem}, {model} and {ext}, e.g. {model}/{track}/{stem}.{ext} or {track}_{stem}.{ext} (default {track}/{stem}.{ext})',
    )
    .option('--format <format>', `${STEM_FORMATS.join(', ')} (ogg: Vorbis; m4a: AAC; alac: Apple Lossless in .m4a)`, DEFAULT_STEM_FORMAT)
    .option('--float32', 'write 32-bit float WAV (with --format wav)')
    .option('--int24', 'write 24-bit WAV, FLAC, AIFF or ALAC (default: the source depth; 16-bit for lossy sources)')
    .option('--sample-rate <hz>', "write stems at this rate (default: the source's)")
    .option('--bitrate <kbps>', `bitrate of a lossy format (${bitrateHelp()})`)
    .option('--mp3-bitrate <kbps>', 'the old name of --bitrate, for --format mp3')
    .option(
      '--clip-mode <mode>',
      `${CLIP_MODES.join(', ')}: as demucs, rescale divides a stem that would clip by 1.01 × its peak, clamp clips at ±1 (default ${DEFAULT_CLIP_MODE}: integer formats clip, float and lossy ones keep it)`,
    )
    .option(
      '--normalize [peak]',
      `scale each stem whose peak exceeds <peak> down to it (default ${DEFAULT_NORMALIZE_PEAK}), as python-audio-separator's --normalization`,
    )
    .option('--json', 'print the result as JSON on stdout')
    .option('--pull', 'first pull the catalog models named with --model or --then that are not installed (as models pull: resumable, SHA-256 checked)')
    .addOption(precisionOption())
    .addOption(deviceOption())
    .addHelpText('after', separatorSpellingsHelp());
}

/** `mp3 32–320, default 320; …`: each lossy format's bitrate range and default, for --help. */
function bitrateHelp(): string {
  return lossyFormats()
    .map((format) => {
      const range = STEM_FORMAT_INFO[format].bitrate;
      return range ? `${format} ${range.min}–${range.max}, default ${range.default}` : format;
    })
    .join('; ');
}

/** The families whose models run with a config the user may name (`--model-config`), from MODEL_FAMILIES. */
function configTakers(): string {
  return MODEL_FAMILIES.filter((family) => family.takesConfig)
    .map((family) => family.takers)
    .join(', ');
}
