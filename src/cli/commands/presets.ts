/** `stemsplit presets list` and `split --preset NAME`: named ensembles (presets/presets.ts). */
import { describeEnsembleMethod } from '../../ensemble/algorithms.js';
import { StemsplitError } from '../../errors.js';
import { registryFor, type ModelRegistry } from '../../models/registry.js';
import { findPreset, methodOf, presetEnsemble, presetListings, presetMembers, type PresetMember } from '../../presets/presets.js';
import { print, printJson, type CommandContext } from '../context.js';

export function presetsList(ctx: CommandContext, options: { readonly json?: boolean }): void {
  const listings = presetListings(ctx.config.dataDir, registryFor(ctx.config));
  if (options.json) {
    printJson(ctx, listings);
    return;
  }
  for (const listing of listings) {
    const state = listing.installed
      ? 'installed'
      : `${listing.members.filter((member) => !member.installed).length} of ${listing.members.length} models missing`;
    print(ctx, `${listing.id}  ${listing.name}  [${listing.origin}; ${state}]`);
    if (listing.description) print(ctx, `  ${listing.description}`);
    print(ctx, `  combined by ${describeEnsembleMethod(methodOf(listing))}${listing.weights ? '' : ' (equal weights)'}`);
    for (const member of listing.members) print(ctx, `  - ${memberLine(member)}`);
  }
  print(ctx, '');
  print(ctx, `run one: stemsplit split FILE --preset NAME; your own: ${ctx.config.dataDir}/presets.json (docs/workflows.md, Presets)`);
}

function memberLine(member: PresetMember): string {
  const name = member.model === member.given ? member.given : `${member.model} (${member.given})`;
  const state = member.installed
    ? 'installed'
    : member.catalog !== null
      ? `not installed: stemsplit models pull ${member.catalog}`
      : "not installed, not in stemsplit's catalog";
  return `${name}: ${state}; terms: ${member.terms ?? 'not known to stemsplit'}`;
}

/** What split's preset flags carry; the rest of split's options pass through. */
interface PresetFlags {
  readonly preset?: string;
  readonly model: string[];
  readonly ensemble?: string;
  readonly ensembleWeights?: string;
  readonly pull?: boolean;
  /** A chain's flags (--chain, --then), which a preset excludes. */
  readonly [flag: string]: unknown;
}

/**
 * `split --preset NAME` as the `--model … --ensemble … --ensemble-weights …` it stands for. With
 * `--pull` the members are left for the pull to fetch; otherwise a missing one is one line saying how.
 */
export function expandPreset<Options extends PresetFlags>(dataDir: string, registry: ModelRegistry, options: Options): Options {
  // What --preset excludes (--model, --ensemble, a chain) the split request's rules refused already (split-request/).
  if (options.preset === undefined) return options;
  const preset = findPreset(dataDir, options.preset);
  const { models, method } = options.pull
    ? { models: presetMembers(preset, registry).map((member) => member.model), method: methodOf(preset) }
    : presetEnsemble(preset, registry);
  return { ...options, model: models, ensemble: method.algorithm, ...(method.weights ? { ensembleWeights: method.weights.join(',') } : {}) };
}
