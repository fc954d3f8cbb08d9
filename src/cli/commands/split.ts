/** `stemsplit split <files…>`: local separation, no server, no credits. */
import { basename, join, resolve } from 'node:path';
import { readAudioHeader } from '../../audio/index.js';
import { stemExtension } from '../../audio/formats.js';
import { describeError, isStemsplitError, StemsplitError, type ErrorCode } from '../../errors.js';
import { twoStemsIndex, type SplitProgress, type StemOutputOptions } from '../../split-worker/split-audio-file.js';
import { removeLeftoverStaging, removeStaging } from '../../split-worker/staging.js';
import { deviceSplitter, type OnLoaded, type SplitJob, type Splitter } from '../../split-worker/worker-pool.js';
import { chainName } from '../../chains/recipe.js';
import { checkChainStems, laterSteps, recipeBase, resolveSteps, type ResolvedStep } from '../chain-steps.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, describeEnsembleMethod, parseEnsembleMethod, type EnsembleMethod } from '../../ensemble/algorithms.js';
import { ENV, ensembleMembers } from '../../config.js';
import { ALIAS_QUALITY_MODELS, CLI_DEFAULT_ALIAS, isStemModelAlias } from '../../models/aliases.js';
import { familyFlags, familyOptionsFrom, MODEL_FAMILIES } from '../../models/families.js';
import type { Precision } from '../../onnx/quantize.js';
import { flagAttribute, flagName } from '../../contract/family.js';
import { allModelsOf, int8Refusal, isEnsembleRef, listedFamily, registryFor, type ModelChoice, type ModelRegistry } from '../../models/registry.js';
import { print, printJson, type CommandContext } from '../context.js';
import { expandInputs } from '../inputs.js';
import { checkFilenameTemplate, DEFAULT_FILENAME, outputPlaces } from '../filename-template.js';
import { StemFolders } from '../stem-folders.js';
import { MODEL_CATALOG } from '../../models/catalog.js';
import { expandPreset } from './presets.js';
import { createProgressBar, createStatusLine } from '../progress.js';
import { isGiven, splitRequestOf, stemOutputFrom, type SplitOptions } from '../split-request.js';
import type { SplitRequest } from '../../split-request/split-request.js';

/**
 * The model or ensemble to run: one --model (a name, a path, an alias, or `A+B`), or several
 * (`--model A --model B`, the same as `A+B`); --ensemble and --ensemble-weights say how an
 * ensemble's stems are combined and need one.
 */
function chooseModel(registry: ModelRegistry, options: SplitOptions): { ref: ModelChoice; ensemble: EnsembleMethod | undefined } {
  const specs = (options.model.length === 0 ? [CLI_DEFAULT_ALIAS] : options.model).flatMap(ensembleMembers);
  if (specs.length > 1 && options.modelConfig !== undefined) {
    throw new StemsplitError('USAGE', "--model-config applies to a single MSST checkpoint; in an ensemble, put each checkpoint's .yaml beside it");
  }
  // One spec may still be an ensemble: an alias whose entry joins models.
  const ref =
    specs.length === 1
      ? registry.resolve(specs[0] as string, options.modelConfig, familyOptionsFrom(options))
      : registry.resolveEnsemble(specs, familyOptionsFrom(options));
  // The rules (split-request/) let --ensemble through only with two or more models; an alias may still join several.
  return { ref, ensemble: isEnsembleRef(ref) ? parseEnsembleMethod(options.ensemble, options.ensembleWeights, ref.members.length) : undefined };
}

/**
 * A chain's steps (`--chain FILE`, or `--model` then each `--then`), as the request names them,
 * resolved and checked, or undefined for a split with one model or ensemble.
 */
function chooseChain(registry: ModelRegistry, options: SplitOptions, request: SplitRequest): ResolvedStep[] | undefined {
  if (request.chain === undefined) return undefined;
  const steps =
    options.chain !== undefined
      ? resolveSteps(registry, request.chain, familyOptionsFrom(options), recipeBase(options.chain))
      : [{ ...chooseModel(registry, options) }, ...resolveSteps(registry, request.chain.slice(1), familyOptionsFrom(options))];
  checkChainStems(steps);
  return steps;
}

/**
 * `--pull`: the catalog models among --model's and --then's names that are not installed yet, pulled as
 * `models pull` pulls them (resumable, hash-checked), their lines on stderr (stdout is the stems').
 */
async function pullMissingModels(ctx: CommandContext, options: SplitOptions): Promise<void> {
  const registry = registryFor(ctx.config);
  const thenModels = (options.then ?? []).map((value) => value.slice(value.indexOf('=') + 1));
  const names = [...options.model, ...thenModels].flatMap(ensembleMembers).filter((name) => MODEL_CATALOG.some((model) => model.name === name));
  const missing = names.filter((name) => {
    try {
      registry.resolve(name);
      return false;
    } catch (error) {
      return isStemsplitError(error) && error.code === 'MODEL_NOT_FOUND';
    }
  });
  if (missing.length === 0) return;
  const { modelsPull } = await import('./models.js');
  const baseUrl = process.env[ENV.modelsBaseUrl];
  await modelsPull({ ...ctx, stdout: ctx.stderr }, [...new Set(missing)], baseUrl ? { baseUrl } : {});
}

/** A family's flag given where no model of that family runs is a mistake the user should hear of, not an option silently dropped. */
function checkFamilyFlags(choice: ModelChoice, options: SplitOptions): void {
  const refs = isEnsembleRef(choice) ? choice.members : [choice];
  const flags = [
    ...familyFlags().map(({ families, flags: declared }) => ({ flag: flagName(declared), given: isGiven(options[flagAttribute(declared)]), families })),
    { flag: '--model-config', given: options.modelConfig !== undefined, families: MODEL_FAMILIES.filter((family) => family.takesConfig) },
  ];
  for (const { flag, given, families } of flags) {
    if (!given || refs.some((ref) => families.some((family) => family.id === ref.kind))) continue;
    const takers = families.map((family) => family.takers).join(', ');
    const running = refs.map((ref) => `${ref.name} (${listedFamily(ref)})`).join(', ');
    const which =
      options.model.length === 0
        ? `no --model was given, so ${CLI_DEFAULT_ALIAS} runs ${running}`
        : `${running} ${refs.length === 1 ? 'is not one' : 'are not'}`;
    throw new StemsplitError('USAGE', `${flag} applies to ${takers}; ${which}`);
  }
}

/** `--precision int8` where a model runs in fp32 only is refused (split, models bench), saying why (its family's record), not silently run in fp32. */
export function checkPrecision(choice: ModelChoice, precision: Precision): void {
  if (precision !== 'int8') return;
  for (const ref of isEnsembleRef(choice) ? choice.members : [choice]) {
    const why = int8Refusal(ref);
    if (why !== undefined)
      throw new StemsplitError('USAGE', `--precision int8: ${ref.name} (${listedFamily(ref)}) runs in fp32 only: ${why}; run it without --precision int8`);
  }
}

/**
 * Ctrl-C, SIGINT or SIGTERM mid-split calls `stop` (which asks the worker to stop at its next
 * chunk or stem, so the running split fails) instead of killing the process at once: the
 * caller then removes the half-encoded stems and exits 130 or 143. A second signal finds the
 * default handlers back and ends the process there and then (a big model's chunk can take a while).
 */
function stopOnInterrupt(stop: () => unknown): { received(): NodeJS.Signals | undefined; dispose(): void } {
  let received: NodeJS.Signals | undefined;
  const dispose = () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
  const onSignal = (signal: NodeJS.Signals) => {
    received = signal;
    dispose();
    void stop();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return { received: () => received, dispose };
}

interface Failure {
  readonly code: ErrorCode;
  readonly message: string;
}

/** Undecodable inputs, found before any model loads: file → one plain sentence. */
async function unreadableInputs(files: readonly string[]): Promise<Map<string, Failure>> {
  const failures = new Map<string, Failure>();
  for (const file of files) {
    try {
      await readAudioHeader(file);
    } catch (error) {
      const reason = describeError(error).replace(/^cannot decode [^:]*: /, '');
      failures.set(file, { code: 'AUDIO_DECODE_FAILED', message: `${file} is not audio stemsplit can read (${reason})` });
    }
  }
  return failures;
}

interface SplitOutcome {
  readonly input: string;
  readonly model: string;
  /** "CPU" or "GPU: <adapter> (<API>)". */
  readonly device: string;
  readonly durationSeconds: number;
  readonly stems: Record<string, string>;
  /** The stems that add up to the song, each part once (separation/mix-set.ts). */
  readonly mixStems: readonly string[];
}

export async function splitCommand(ctx: CommandContext, names: string[], given: SplitOptions): Promise<void> {
  // What the flags ask for, checked by the rules the API's requests are (split-request/), before a preset names its models.
  const request = splitRequestOf(given);
  const output = stemOutputFrom(request, given);
  const options = expandPreset(ctx.config.dataDir, registryFor(ctx.config), given);
  if (options.filename !== undefined) checkFilenameTemplate(options.filename);
  const inputs = expandInputs(names);
  // One name that cannot be split is the command's one error line; in a batch it is named and the rest go on.
  const [firstProblem] = inputs.problems.values();
  if (firstProblem !== undefined && inputs.files.length === 0 && inputs.problems.size === 1) throw new StemsplitError(firstProblem.code, firstProblem.message);
  const files = [...inputs.files];
  const { config } = ctx;
  if (options.pull) await pullMissingModels(ctx, options);
  const registry = registryFor(config);
  const chain = chooseChain(registry, options, request);
  const { ref, ensemble } = chain?.[0] ?? chooseModel(registry, options);
  // Every model the run loads (a chain's steps together) is checked as one ensemble's members would be.
  const everyModel = chain ? allModelsOf(chain.map((step) => step.ref)) : ref;
  checkFamilyFlags(everyModel, options);
  checkPrecision(everyModel, config.precision);
  const twoStems = request.twoStems;
  // Before anything loads, where the model's sources are known up front; the worker checks again once it has loaded.
  if (twoStems !== undefined && !isEnsembleRef(ref) && ref.sources.length > 0) twoStemsIndex(twoStems, ref.name, ref.sources);
  // A run killed outright (SIGKILL, power loss) could not clear its half-encoded stems: this one does.
  for (const leftover of await removeLeftoverStaging(resolve(options.output))) ctx.stderr.write(`removed ${leftover}, left by an interrupted run\n`);
  for (const line of inputs.folderLines) ctx.stderr.write(`${line}\n`);
  const failures = new Map<string, Failure>([...inputs.problems, ...(await unreadableInputs(files))]);
  // A batch names each failure as it happens; a single file's failure is the command's one error line.
  const many = files.length + inputs.problems.size > 1 || inputs.fromFolder;
  if (many) for (const { message } of failures.values()) ctx.stderr.write(`stemsplit: ${message}\n`);
  // Paired by position, so a file named twice gets two folders too.
  // One folder, one model's stems (stem-folders.ts): the default layout moves aside, a template of the user's is refused.
  const folders = new StemFolders(config.dataDir);
  // What the run is called in folders, records and --json: the model, or the chain's models in order.
  const runName = chain ? chainName(chain.map((step) => step.ref.name)) : ref.name;
  const places = outputPlaces(files, options.output, { template: options.filename ?? DEFAULT_FILENAME, model: runName, ext: stemExtension(output.format) }).map(
    (place) => {
      if (options.filename === undefined) return { ...place, outDir: folders.defaultFolder(place.outDir, runName) };
      folders.refuseOverwriting(place.outDir, place.stemFile, runName);
      return place;
    },
  );
  const readable = files.flatMap((file, i) => (failures.has(file) ? [] : [{ file, ...(places[i] as { outDir: string; stemFile: string }) }]));
  const results: SplitOutcome[] = [];
  if (readable.length > 0) {
    // One worker process runs the jobs (as `serve` does): this one keeps drawing the progress.
    // --device gpu with no adapter is refused here, in one line, before any model loads.
    const splitter = deviceSplitter({ cacheDir: config.cacheDir, intraOpThreads: config.intraOpThreads, precision: config.precision }, 1, {
      choice: config.device,
      gpuWorkers: 1,
    });
    // Said once the model has loaded: a model file refused as it loads leaves its one line alone on stderr.
    const loading = createStatusLine(ctx.stderr);
    loading.show(`Loading ${isEnsembleRef(everyModel) ? `models ${everyModel.members.map((member) => member.name).join(', ')}` : `model ${ref.name}`}…`);
    let announce: string[] | undefined = chain ? chainLines(chain) : loadedLines(registry, ref, ensemble, options.model);
    // Said once, with the device; again only when the GPU failed and the CPU starts the file over.
    const onLoaded: OnLoaded = (device, fellBackBecause) => {
      loading.clear();
      if (fellBackBecause !== undefined) ctx.stderr.write(`stemsplit: the GPU failed (${fellBackBecause}); starting over on the ${device}\n`);
      const [first, ...rest] = announce ?? [];
      if (first !== undefined) for (const line of [`${first}, on ${device}`, ...rest]) ctx.stderr.write(`${line}\n`);
      announce = undefined;
    };
    const interrupts = stopOnInterrupt(() => splitter.cancel());
    try {
      for (const { file, outDir, stemFile } of readable) {
        try {
          const named = stemFile === '{stem}.' + stemExtension(output.format) ? output : { ...output, stemFile };
          const steps = chain ? { then: laterSteps(chain), ...(options.keepIntermediate ? { keepIntermediate: true } : {}) } : {};
          const outcome = await splitOne(
            ctx,
            splitter,
            { file, outDir, ref, name: runName, ensemble, output: { ...named, ...steps }, many, onLoaded },
            interrupts.received,
          );
          folders.record(
            outDir,
            runName,
            Object.values(outcome.stems).map((path) => basename(path)),
          );
          results.push(outcome);
        } catch (error) {
          if (isStemsplitError(error) && (error.code === 'INTERRUPTED' || error.code === 'TERMINATED')) throw error;
          // One file failing does not stop the batch: say so in one line and go on.
          if (!many) throw error;
          failures.set(file, { code: isStemsplitError(error) ? error.code : 'SEPARATION_FAILED', message: `${file}: ${describeError(error)}` });
          ctx.stderr.write(`stemsplit: ${file}: ${describeError(error)}\n`);
        }
      }
    } finally {
      loading.clear();
      interrupts.dispose();
      await splitter.close();
    }
  }
  if (options.json) {
    // Every input in the order given, the failed ones with their error, so a script sees them all.
    const done = [...results];
    const entries = [...files, ...inputs.problems.keys()].map((file) => {
      const index = done.findIndex((r) => r.input === file);
      if (index >= 0) return done.splice(index, 1)[0];
      return { input: file, error: failures.get(file) ?? { code: 'SEPARATION_FAILED', message: `${file} was not split` } };
    });
    printJson(ctx, many ? entries : entries[0]);
  } else for (const r of results) for (const [stem, path] of Object.entries(r.stems)) print(ctx, `${stem}\t${path}`);
  const [first] = failures.values();
  if (first !== undefined && !many) throw new StemsplitError(first.code, first.message);
  if (failures.size > 0) {
    const failed = [...failures.keys()].map((file) => basename(file)).join(', ');
    throw new StemsplitError(batchCode([...failures.values()]), `${failures.size} of ${files.length + inputs.problems.size} files failed: ${failed}`);
  }
}

/** What the run says once its models are loaded: which, the terms of their weights, and for the bundled model what a pull would give. */
function loadedLines(registry: ModelRegistry, ref: ModelChoice, ensemble: EnsembleMethod | undefined, models: readonly string[]): string[] {
  if (isEnsembleRef(ref)) {
    const members = ref.members.map((member) => `${member.name} (terms of its weights: ${member.terms})`).join(', ');
    return [`Loaded models ${members}; their stems are combined by ${describeEnsembleMethod(ensemble ?? { algorithm: DEFAULT_ENSEMBLE_ALGORITHM })}`];
  }
  const lines = [`Loaded model ${ref.name} (terms of its weights: ${ref.terms})`];
  const alias = models.length <= 1 ? (models[0] ?? CLI_DEFAULT_ALIAS) : undefined;
  if (alias !== undefined && isStemModelAlias(alias) && registry.bundled().some((bundled) => bundled.path === ref.path)) {
    lines.push(
      `(the small bundled model; for Demucs v4 quality run "stemsplit models pull ${ALIAS_QUALITY_MODELS[alias]}" once; its weights are for research use only)`,
    );
  }
  return lines;
}

/** What a chain's run says once its models are loaded: each step, what it splits, and the terms of its models' weights. */
function chainLines(steps: readonly ResolvedStep[]): string[] {
  const lines = steps.map((step, index) => {
    const models = isEnsembleRef(step.ref) ? step.ref.members : [step.ref];
    const what = step.input === undefined ? 'the track' : step.input;
    const named = models.map((model) => `${model.name} (terms of its weights: ${model.terms})`).join(' + ');
    return `  step ${index + 1}: ${what} with ${named}`;
  });
  return [`Loaded a chain of ${steps.length} steps`, ...lines];
}

/** A batch's exit: the code its failures share (8 when every one was unreadable audio), else SEPARATION_FAILED. */
function batchCode(failures: readonly Failure[]): ErrorCode {
  const codes = new Set(failures.map((f) => f.code));
  return codes.size === 1 ? ([...codes][0] as ErrorCode) : 'SEPARATION_FAILED';
}

interface OneSplit {
  readonly file: string;
  readonly outDir: string;
  readonly ref: ModelChoice;
  /** The model's name, or the chain's. */
  readonly name: string;
  readonly ensemble: EnsembleMethod | undefined;
  readonly output: StemOutputOptions & Pick<SplitJob, 'then' | 'keepIntermediate'>;
  readonly many: boolean;
  readonly onLoaded: OnLoaded;
}

async function splitOne(ctx: CommandContext, splitter: Splitter, one: OneSplit, signalled: () => NodeJS.Signals | undefined): Promise<SplitOutcome> {
  const track = basename(one.outDir);
  const bar = createProgressBar(ctx.stderr, one.many ? `${track} ` : '');
  const started = Date.now();
  const job = {
    inputPath: resolve(one.file),
    model: one.ref,
    ...(one.ensemble ? { ensemble: one.ensemble } : {}),
    outDir: one.outDir,
    ...one.output,
  };
  const label = ({ phase, step, steps }: SplitProgress) => (steps === undefined ? phase : `step ${step}/${steps} ${phase}`);
  const result = await splitter
    .split(job, (progress) => bar.update(progress.percent, label(progress)), undefined, one.onLoaded)
    .catch(async (error: unknown) => {
      bar.done();
      const signal = signalled();
      if (!signal) throw error;
      await removeStaging(one.outDir);
      throw new StemsplitError(signal === 'SIGTERM' ? 'TERMINATED' : 'INTERRUPTED', `stopped by ${signal}; nothing was written for ${track}`);
    });
  const seconds = (Date.now() - started) / 1000;
  const count = Object.keys(result.stems).length;
  bar.done(`${track}: ${count} stem${count === 1 ? '' : 's'} in ${one.outDir} (${seconds.toFixed(1)} s for ${result.durationSeconds.toFixed(1)} s of audio)`);
  return {
    input: one.file,
    model: one.name,
    device: result.device,
    durationSeconds: result.durationSeconds,
    stems: { ...result.stems },
    mixStems: [...(result.mixStems ?? Object.keys(result.stems))],
  };
}
