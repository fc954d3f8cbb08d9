import { networkInterfaces } from 'node:os';
import { DEFAULT_ENSEMBLE_ALGORITHM, describeEnsembleMethod } from '../../ensemble/algorithms.js';
import { MIB } from '../../limits.js';
import { STEM_MODEL_ALIASES } from '../../models/aliases.js';
import { startServer } from '../../server.js';
import type { DataStore } from '../../store/index.js';
import { addWebSession, createWebSession, hasWebSession, recordPageOrigins } from '../../services/web-session.js';
import { pageOrigins, webSessionLink } from '../../web/session.js';
import { print, runUntilSignalled, type CommandContext } from '../context.js';
import { jobSlots } from '../job-slots.js';

export interface ServeOptions {
  /** Revoke every web-session key and print a link with a new one. */
  readonly newLink?: boolean;
  /** Print a link with one more web-session key, the earlier links left working. */
  readonly printLink?: boolean;
}

export async function serveCommand(ctx: CommandContext, options: ServeOptions = {}): Promise<void> {
  const server = await startServer(ctx.config);
  // Every alias resolves: serve refused to start otherwise (models/served-check.ts).
  const aliasModels = STEM_MODEL_ALIASES.map((alias) => ({ alias, model: server.registry.resolveAlias(alias).name }));
  print(ctx, `stemsplit listening on ${server.url}/v1 (data: ${ctx.config.dataDir})`);
  const publicUrl = ctx.config.publicUrl;
  if (publicUrl) print(ctx, `clients reach it at ${publicUrl}/v1 (--public-url)`);
  const origins = pageOrigins({ host: ctx.config.host, port: server.port, publicUrl, tls: ctx.config.tls !== undefined }, networkInterfaces());
  await recordPageOrigins(server.data, origins);
  await printPageLinks(ctx, server.data, origins, options);
  const limits = `uploads up to ${ctx.config.maxUploadBytes / MIB} MB (--max-upload-mb)`;
  const length = ctx.config.maxMinutes === undefined ? 'sources of any length (streamed)' : `each of at most ${ctx.config.maxMinutes} minutes of audio`;
  const ensembles = aliasModels.some(({ model }) => model.includes('+')) ? ` (ensembles combined by ${describeEnsembleMethod(ctx.config.ensemble ?? { algorithm: DEFAULT_ENSEMBLE_ALGORITHM })})` : '';
  const aliases = aliasModels.map(({ alias, model }) => `${alias} → ${model}`).join(', ');
  ctx.stderr.write(`models: ${aliases}${ensembles}; ${jobSlots(server.devices, ctx.config)}, ${length}, ${limits}\n`);
  const elsewhere = ctx.config.databaseUrl ? 'another node' : 'the next start';
  await runUntilSignalled(ctx, () => server.close(), {
    graceful: `running jobs finish, queued jobs stay queued for ${elsewhere}`,
    immediate: `running jobs resume on ${elsewhere}`,
  });
}

/**
 * The page's link, one per address it is reached at. Its key is printed when it is made (only
 * its hash is kept): on the first start, with --new-link (ending the earlier links) or with
 * --print-link (one more key, the earlier links still working). Other starts print the address.
 */
async function printPageLinks(ctx: CommandContext, data: DataStore, origins: readonly string[], options: ServeOptions): Promise<void> {
  const fresh = options.newLink === true || !(await hasWebSession(data));
  if (fresh || options.printLink === true) {
    const session = fresh ? await createWebSession(data) : await addWebSession(data);
    for (const origin of origins) print(ctx, `Open ${webSessionLink(origin, session.key)} to split songs in the browser`);
    return;
  }
  for (const origin of origins) {
    print(ctx, `The web page is at ${webSessionLink(origin, '')}: the link printed when its key was made still works ("stemsplit keys link" prints one again)`);
  }
}
