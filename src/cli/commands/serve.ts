import { networkInterfaces } from 'node:os';
import { DEFAULT_ENSEMBLE_ALGORITHM, describeEnsembleMethod } from '../../ensemble/algorithms.js';
import { MIB } from '../../limits.js';
import { STEM_MODEL_ALIASES } from '../../models/aliases.js';
import { startServer } from '../../server.js';
import type { DataStore } from '../../store/index.js';
import { endWebSessions, hasWebSession, recordPageOrigins } from '../../services/web-session.js';
import { INVITE_TTL_SECONDS } from '../../services/people.js';
import { DEFAULT_ACCOUNT } from '../../store/index.js';
import { inviteLink, pageOrigins, webSessionLink } from '../../net/page-links.js';
import { print, runUntilSignalled, type CommandContext } from '../context.js';
import { jobSlots } from '../job-slots.js';

export interface ServeOptions {
  /** Revoke every web-session key of the admin account and print a new invite. */
  readonly newLink?: boolean;
  /** Print a new invite, the keys made so far left working. */
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
  const ensembles = aliasModels.some(({ model }) => model.includes('+'))
    ? ` (ensembles combined by ${describeEnsembleMethod(ctx.config.ensemble ?? { algorithm: DEFAULT_ENSEMBLE_ALGORITHM })})`
    : '';
  const aliases = aliasModels.map(({ alias, model }) => `${alias} → ${model}`).join(', ');
  ctx.stderr.write(`models: ${aliases}${ensembles}; ${jobSlots(server.devices, ctx.config)}, ${length}, ${limits}\n`);
  const elsewhere = ctx.config.databaseUrl ? 'another node' : 'the next start';
  await runUntilSignalled(ctx, () => server.close(), {
    graceful: `running jobs finish, queued jobs stay queued for ${elsewhere}`,
    immediate: `running jobs resume on ${elsewhere}`,
  });
}

/**
 * The page's link, one per address it is reached at. What it carries is a one-time invite for the
 * admin account, never a key: the page exchanges it for its own key, so no working key is written
 * to stdout or a journal. An invite is printed on a start that finds no web-session key (the first
 * one, or one before anybody opened the last invite), with --new-link (which also ends the
 * web-session keys made so far) or --print-link; each new invite withdraws the unused ones. Other
 * starts print the address alone.
 */
async function printPageLinks(ctx: CommandContext, data: DataStore, origins: readonly string[], options: ServeOptions): Promise<void> {
  if (options.newLink === true || options.printLink === true || !(await hasWebSession(data))) {
    if (options.newLink === true) await endWebSessions(data);
    await data.invites.withdrawUnused(DEFAULT_ACCOUNT);
    const created = await data.invites.create(DEFAULT_ACCOUNT, INVITE_TTL_SECONDS);
    for (const origin of origins) print(ctx, `Open ${inviteLink(origin, created.invite)} to split songs in the browser`);
    ctx.stderr.write(
      `That link is a one-time invite for the admin account "${DEFAULT_ACCOUNT}": the first browser to open it, within ${INVITE_TTL_SECONDS / 3600} hours, gets its own key ("stemsplit serve --print-link" prints a new one).\n`,
    );
    return;
  }
  for (const origin of origins) {
    print(
      ctx,
      `The web page is at ${webSessionLink(origin, '')}: browsers that opened its invite keep their key ("stemsplit serve --print-link" prints a new invite)`,
    );
  }
}
