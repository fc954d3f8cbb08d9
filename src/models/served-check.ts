/**
 * What `serve` and `worker` check before they start: every model their aliases and `--models`
 * name can be found and read, so a typo or a moved file is one line at start rather than a
 * failed job per request. An alias's fallbacks may be catalog models not pulled yet; a file
 * it names must exist, and at least one of its entries must be installed.
 */
import { ensembleMembers } from '../config.js';
import { describeError, isStemsplitError, StemsplitError } from '../errors.js';
import { ALIAS_FLAGS, STEM_MODEL_ALIASES, type StemModelAlias } from './aliases.js';
import { familyById } from './families.js';
import { isEnsembleRef, isPathSpec, type ModelChoice, type ModelRegistry } from './registry.js';

export interface ServedModels {
  readonly modelAliases: Readonly<Record<StemModelAlias, readonly string[]>>;
  readonly servedModels: readonly string[] | undefined;
}

export function checkServedModels(registry: ModelRegistry, served: ServedModels): void {
  const known = new Map(registry.listing().map((row) => [row.name, row]));
  for (const alias of STEM_MODEL_ALIASES) {
    const flag = ALIAS_FLAGS[alias];
    for (const entry of served.modelAliases[alias]) {
      for (const member of ensembleMembers(entry)) {
        if (isPathSpec(member)) readable(registry, member, flag);
        else if (!known.has(member)) throw new StemsplitError('MODEL_NOT_FOUND', `${flag}: unknown model "${member}" (stemsplit models list names them)`);
      }
    }
    try {
      readable(registry, registry.resolveAlias(alias), flag);
    } catch (error) {
      if (isStemsplitError(error) && error.message.startsWith(flag)) throw error;
      const pull = served.modelAliases[alias].find((entry) => known.has(entry));
      throw new StemsplitError(
        'MODEL_NOT_FOUND',
        `${flag}: none of ${served.modelAliases[alias].join(', ')} is installed${pull ? `; run: stemsplit models pull ${pull}` : ''}`,
        { cause: error },
      );
    }
  }
  for (const name of served.servedModels ?? []) {
    const row = known.get(name);
    if (!row) throw new StemsplitError('MODEL_NOT_FOUND', `--models: unknown model "${name}" (stemsplit models list names them)`);
    if (!row.installed) throw new StemsplitError('MODEL_NOT_FOUND', `--models: ${name} is not installed; run: stemsplit models pull ${name}`);
    readable(registry, name, '--models');
  }
}

/** A model (by spec or resolved) whose files are there and read as its family checks them; a refusal names the flag and the file. */
function readable(registry: ModelRegistry, model: string | ModelChoice, flag: string): void {
  try {
    const choice = typeof model === 'string' ? registry.resolve(model) : model;
    for (const ref of isEnsembleRef(choice) ? choice.members : [choice]) {
      familyById(ref.kind).check?.(ref);
    }
  } catch (error) {
    throw new StemsplitError(isStemsplitError(error) ? error.code : 'MODEL_INVALID', `${flag}: ${describeError(error)}`, { cause: error });
  }
}
