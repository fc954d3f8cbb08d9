/**
 * Creating split jobs: resolve the source (an upload or a guarded download), probe its length,
 * then in ONE transaction check the balance, debit it, write the ledger row, consume the upload
 * and insert the job. Nothing is charged for a job that does not exist, and no job exists
 * without its charge.
 */
import { rm } from 'node:fs/promises';
import { probeDurationSeconds } from '../audio/index.js';
import { StemsplitError, describeError, isStemsplitError } from '../errors.js';
import { isStemModelAlias, type StemModelAlias } from '../models/aliases.js';
import { allModelsOf, isEnsembleRef, type ModelChoice } from '../models/registry.js';
import { chainCredits, chainName, chainStems, type Recipe } from '../chains/recipe.js';
import { DEFAULT_ENSEMBLE_ALGORITHM, parseEnsembleMethod } from '../ensemble/algorithms.js';
import { assertAllowedTarget, downloadToFile, FetchRefused, type GuardOptions } from '../net/fetch.js';
import type { EnsembleMethod } from '../ensemble/algorithms.js';
import { ID_PATTERN, isoAt, newId, serializeJobOptions, type DataStore, type JobOptions, type Principal, type Split } from '../store/index.js';
import type { ModelService } from './models.js';
import { twoStemsProblem, type ChainStepRequest, type SplitRequest } from '../split-request/split-request.js';
import { jobOptionsOf } from '../store/job-options.js';

export type SplitInput = { readonly type: 'direct_url'; readonly url: string } | { readonly type: 'uploaded_file'; readonly uploadId: string };

/** What a split asks for (split-request/: the fields and their rules, checked by the API's schema), with its source, alias and webhook. */
export type CreateSplitRequest = SplitRequest & {
  readonly input: SplitInput;
  readonly stemModel: StemModelAlias;
  readonly webhookUrl?: string | undefined;
};

export interface SplitServiceOptions {
  readonly guard: GuardOptions;
  readonly maxDownloadBytes: number;
  readonly downloadTimeoutMs: number;
  /** The longest source a job takes; unset: any length (splits stream their audio). */
  readonly maxSeconds?: number;
  /** How the aliases' ensembles combine (serve --ensemble), recorded on each job an alias makes. */
  readonly aliasEnsemble?: EnsembleMethod | undefined;
}

interface Source {
  /** Relative to the data dir. */
  readonly path: string;
  readonly filename: string;
  readonly uploadId?: string;
  /** Removes a downloaded file when the job is not created. */
  discard(): Promise<void>;
}

export class SplitService {
  readonly #data: DataStore;
  readonly #models: ModelService;
  readonly #options: SplitServiceOptions;

  constructor(data: DataStore, models: ModelService, options: SplitServiceOptions) {
    this.#data = data;
    this.#models = models;
    this.#options = options;
  }

  /** A page of the account's jobs, newest first, and the cursor of the next page (null on the last). */
  async list(principal: Principal, limit: number, cursor: string | undefined): Promise<{ splits: Split[]; nextCursor: string | null }> {
    const rows = await this.#data.splits.listForAccount(principal.accountId, limit + 1, cursor);
    const splits = rows.slice(0, limit);
    return { splits, nextCursor: rows.length > limit ? (splits[splits.length - 1]?.id ?? null) : null };
  }

  /** One of the account's jobs; another account's job is as invisible as one that does not exist. */
  async get(principal: Principal, splitId: string): Promise<Split> {
    const split = await this.#find(splitId);
    if (!split || split.accountId !== principal.accountId || split.deletedAt !== null)
      throw new StemsplitError('NOT_FOUND', `no split ${splitId.slice(0, 64)}`);
    return split;
  }

  /** A job its caller may delete: one of the account's, or, for an admin's key, anyone's. */
  async deletable(principal: Principal, splitId: string): Promise<Split> {
    if (principal.role !== 'admin') return this.get(principal, splitId);
    const split = await this.#find(splitId);
    if (!split || split.deletedAt !== null) throw new StemsplitError('NOT_FOUND', `no split ${splitId.slice(0, 64)}`);
    return split;
  }

  /** The file of a kept stem of a succeeded job, or undefined once it is gone. */
  stemFile(splitId: string, stem: string): Promise<{ split: Split; path: string } | undefined> {
    return this.#keptFile(splitId, (split) => this.#data.layout.stemFile(splitId, stem, split.outputFormat));
  }

  /** The source a succeeded job's stems came from, kept as long as they are; undefined once gone. */
  sourceFile(splitId: string): Promise<{ split: Split; path: string } | undefined> {
    return this.#keptFile(splitId, (split) => split.sourcePath);
  }

  async #find(splitId: string): Promise<Split | undefined> {
    return ID_PATTERN.test(splitId) ? this.#data.splits.get(splitId) : undefined;
  }

  /** A file of a succeeded job whose stems are still kept (retention purges the stems and the source together). */
  async #keptFile(splitId: string, relativePath: (split: Split) => string): Promise<{ split: Split; path: string } | undefined> {
    const split = await this.#find(splitId);
    if (!split || split.status !== 'succeeded' || split.purgedAt !== null) return undefined;
    return { split, path: this.#data.layout.absolute(relativePath(split)) };
  }

  /**
   * `onCreated` runs inside the transaction that creates the job (the API stores its idempotent
   * response there), so a crash cannot leave a job whose creator never learned of it.
   */
  async create(principal: Principal, given: CreateSplitRequest, baseUrl: string, onCreated?: (split: Split) => Promise<void>): Promise<Split> {
    let request: CreateSplitRequest = this.#models.expandPreset(given);
    const id = newId('split');
    const steps = request.chain ? this.#chainSteps(request) : undefined;
    // The job keeps each step by the model it resolved to, as it keeps one model's name.
    if (steps && request.chain) request = { ...request, chain: steps.map((ref, index) => resolvedStep(request.chain?.[index] as ChainStepRequest, ref)) };
    // A chain's models are checked together, as an ensemble's members are.
    const model = steps ? allModelsOf(steps) : this.#models.choose(request);
    const options = this.#jobOptions(request, model);
    const modelName = steps ? chainName(steps.map((step) => step.name)) : model.name;
    if (request.webhookUrl) await this.#checkWebhookTarget(request.webhookUrl);
    const source = await this.#source(id, principal, request.input);
    try {
      const seconds = await this.#probe(source.path);
      const credits = chainCredits(seconds, steps?.length ?? 1);
      return await this.#data.store.transaction(async () => {
        const split = await this.#insert(
          id,
          principal,
          request,
          source,
          { modelName, stemModel: stemModelOf(request, model), jobOptions: serializeJobOptions(options) },
          credits,
          baseUrl,
        );
        await onCreated?.(split);
        return split;
      });
    } catch (error) {
      await source.discard();
      throw error;
    }
  }

  /**
   * A chain's steps resolved as a job's model is (names, aliases, ensembles with their method
   * checked), and its stems checked where the models' listings name them; each problem names its step.
   */
  #chainSteps(request: CreateSplitRequest): ModelChoice[] {
    const recipe = request.chain as Recipe;
    const steps = recipe.map((step, index) => {
      try {
        const ref = this.#models.choose({ stemModel: request.stemModel, model: step.model, models: step.models });
        if (isEnsembleRef(ref)) parseEnsembleMethod(step.ensemble, step.ensembleWeights?.join(','), ref.members.length);
        else if (step.ensemble !== undefined || step.ensembleWeights !== undefined)
          throw new StemsplitError('VALIDATION_ERROR', 'ensemble and ensembleWeights combine the models of `models`');
        return ref;
      } catch (error) {
        if (!isStemsplitError(error)) throw error;
        throw new StemsplitError(
          error.code === 'USAGE' ? 'VALIDATION_ERROR' : error.code,
          `chain step ${index + 1}: ${error.message.replace(/^--ensemble(-weights)?/, (flag) => (flag === '--ensemble' ? 'ensemble' : 'ensembleWeights'))}`,
          { cause: error },
        );
      }
    });
    const known = steps.map((ref) => (!isEnsembleRef(ref) && ref.sources.length > 0 ? ref.sources : undefined));
    const stems = chainStems(
      recipe.map((step) => step.input),
      known,
    );
    if ('problem' in stems) throw new StemsplitError('VALIDATION_ERROR', `chain: ${stems.problem}`);
    return steps;
  }

  /** A webhook that could never be delivered is refused now, not retried for a day. */
  async #checkWebhookTarget(url: string): Promise<void> {
    try {
      await assertAllowedTarget(url, this.#options.guard);
    } catch (error) {
      throw new StemsplitError('VALIDATION_ERROR', `webhookUrl: ${describeError(error)}`, { cause: error });
    }
  }

  /**
   * What the job records beside its model: an ensemble's method, decided here once (the one the
   * request names, else for an alias's ensemble the server's, else avg_wave), two stems (checked against the stems the model writes, where its
   * listing knows them) and the depth.
   */
  #jobOptions(request: CreateSplitRequest, model: ModelChoice): JobOptions {
    const named = request.models !== undefined || (request.model?.includes('+') ?? false);
    const method = named ? { algorithm: request.ensemble, weights: request.ensembleWeights } : this.#options.aliasEnsemble;
    const ensemble =
      request.chain === undefined && isEnsembleRef(model)
        ? { ensemble: method?.algorithm ?? DEFAULT_ENSEMBLE_ALGORITHM, ...(method?.weights ? { ensembleWeights: [...method.weights] } : {}) }
        : {};
    if (request.twoStems !== undefined) {
      const sources = isEnsembleRef(model) ? [...new Set(model.members.flatMap((member) => member.sources))] : model.sources;
      const problem = sources.length === 0 ? undefined : twoStemsProblem(request.twoStems, model.name, sources);
      if (problem !== undefined) throw new StemsplitError('VALIDATION_ERROR', problem);
    }
    if (request.modelOptions !== undefined) this.#models.checkModelOptions(model, request.modelOptions);
    this.#models.checkPrecision(model, request.modelOptions);
    // The request's own fields as the store keeps them (store/job-options.ts), beside the method decided here.
    const { ensemble: _asked, ensembleWeights: _weights, ...kept } = jobOptionsOf(request);
    return { ...ensemble, ...kept };
  }

  async #insert(
    id: string,
    principal: Principal,
    request: CreateSplitRequest,
    source: Source,
    model: Pick<Split, 'modelName' | 'stemModel' | 'jobOptions'>,
    credits: number,
    baseUrl: string,
  ): Promise<Split> {
    // Locked until the charge commits: a concurrent create on another node reads the balance after it.
    const account = await this.#data.accounts.lockForCharge(principal.accountId);
    if (!account) throw new StemsplitError('UNAUTHORIZED', 'the API key has no account');
    if (account.balance < credits) {
      throw new StemsplitError('INSUFFICIENT_CREDITS', `this job needs ${credits} credits (seconds of audio) and the balance is ${account.balance}`);
    }
    if (source.uploadId && !(await this.#data.uploads.consume(source.uploadId))) {
      throw new StemsplitError('VALIDATION_ERROR', `upload ${source.uploadId} was already used by another split`);
    }
    const now = isoAt(this.#data.clock.now());
    const split: Split = {
      id,
      accountId: principal.accountId,
      apiKeyId: principal.apiKeyId,
      status: 'queued',
      ...model,
      filename: source.filename,
      durationSeconds: credits,
      creditsUsed: credits,
      progress: 0,
      sourcePath: source.path,
      webhookUrl: request.webhookUrl ?? null,
      baseUrl,
      stemNames: null,
      mixStems: null,
      outputFormat: request.outputFormat,
      errorCode: null,
      errorMessage: null,
      attempts: 0,
      createdAt: now,
      updatedAt: now,
      finishedAtMs: null,
      purgedAt: null,
      leaseOwner: null,
      leaseExpiresAtMs: null,
      device: null,
      deletedAt: null,
    };
    await this.#data.splits.insert(split);
    await this.#data.accounts.addLedgerEntry(principal.accountId, 'charge', -credits, id, `split ${id}`);
    return split;
  }

  async #probe(relativePath: string): Promise<number> {
    let seconds: number;
    try {
      seconds = await probeDurationSeconds(this.#data.layout.absolute(relativePath));
    } catch (error) {
      throw new StemsplitError('VALIDATION_ERROR', `the source is not decodable audio: ${describeError(error)}`, { cause: error });
    }
    if (!(seconds > 0)) throw new StemsplitError('VALIDATION_ERROR', 'the source audio is empty');
    const limit = this.#options.maxSeconds;
    if (limit !== undefined && seconds > limit) {
      const length = (n: number) => `${Math.floor(Math.round(n) / 60)} min ${Math.round(n) % 60} s`;
      throw new StemsplitError('VALIDATION_ERROR', `the source lasts ${length(seconds)}; this server splits at most ${length(limit)} of audio per job`);
    }
    return seconds;
  }

  async #source(splitId: string, principal: Principal, input: SplitInput): Promise<Source> {
    return input.type === 'uploaded_file' ? this.#uploadedSource(principal, input) : this.#downloadedSource(splitId, input.url);
  }

  async #uploadedSource(principal: Principal, input: Extract<SplitInput, { type: 'uploaded_file' }>): Promise<Source> {
    const invalid = (why: string) => new StemsplitError('VALIDATION_ERROR', `input.uploadId ${input.uploadId}: ${why}`);
    const upload = await this.#data.uploads.get(input.uploadId);
    if (!upload || upload.accountId !== principal.accountId) throw invalid('no such upload for this account');
    if (upload.status === 'used') throw invalid('this upload was already used by a split');
    if (upload.status !== 'complete') throw invalid('the file has not been uploaded yet');
    if (this.#data.uploads.isExpired(upload)) throw invalid('the reservation has expired');
    return {
      path: this.#data.layout.uploadFile(upload.id),
      filename: upload.filename,
      uploadId: upload.id,
      discard: async () => undefined,
    };
  }

  async #downloadedSource(splitId: string, url: string): Promise<Source> {
    const path = this.#data.layout.sourceFile(splitId);
    const absolute = this.#data.layout.absolute(path);
    try {
      const result = await downloadToFile(url, absolute, {
        ...this.#options.guard,
        maxBytes: this.#options.maxDownloadBytes,
        timeoutMs: this.#options.downloadTimeoutMs,
      });
      return { path, filename: result.filename, discard: () => rm(absolute, { force: true }) };
    } catch (error) {
      if (error instanceof FetchRefused) throw new StemsplitError('VALIDATION_ERROR', `input.url: ${error.message}`, { cause: error });
      throw new StemsplitError('VALIDATION_ERROR', `input.url could not be fetched: ${describeError(error)}`, { cause: error });
    }
  }
}

/** A chain's step as the job keeps it: the model (or ensemble members) it resolved to, its input and method as asked. */
function resolvedStep(step: ChainStepRequest, ref: ModelChoice): ChainStepRequest {
  const input = step.input !== undefined ? { input: step.input } : {};
  if (!isEnsembleRef(ref)) return { ...input, model: ref.name };
  const method = {
    ...(step.ensemble !== undefined ? { ensemble: step.ensemble } : {}),
    ...(step.ensembleWeights !== undefined ? { ensembleWeights: [...step.ensembleWeights] } : {}),
  };
  return { ...input, models: ref.members.map((member) => member.name), ...method };
}

/**
 * The spec's `stemModel` of a job that named its model: the alias it came through, or the one
 * whose stems it writes (6s where it writes guitar or piano), so clients that read only
 * stemModel still see one of its two values.
 */
function stemModelOf(request: CreateSplitRequest, model: ModelChoice): StemModelAlias {
  if (request.model === undefined && request.models === undefined) return request.stemModel;
  if (request.model !== undefined && isStemModelAlias(request.model)) return request.model;
  const sources = isEnsembleRef(model) ? model.members.flatMap((member) => member.sources) : model.sources;
  return sources.includes('guitar') || sources.includes('piano') ? '6s' : '4s';
}
