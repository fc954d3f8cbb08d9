import { startServer } from '../../server.js';
import { createWebSession, hasWebSession, webSessionLink } from '../../web/session.js';
import { print, runUntilSignalled, type CommandContext } from '../context.js';

export async function serveCommand(ctx: CommandContext, options: { newLink?: boolean } = {}): Promise<void> {
  const server = await startServer(ctx.config);
  const alias4 = safeName(() => server.registry.resolveAlias('4s').name);
  const alias6 = safeName(() => server.registry.resolveAlias('6s').name);
  print(ctx, `stemsplit listening on ${server.url}/v1 (data: ${ctx.config.dataDir})`);
  const publicUrl = ctx.config.publicUrl;
  if (publicUrl) print(ctx, `clients reach it at ${publicUrl}/v1 (--public-url)`);
  // The link's key lives until replaced: printed when made, since only its hash is kept.
  if (options.newLink === true || !(await hasWebSession(server.data))) {
    const session = await createWebSession(server.data);
    print(ctx, `Open ${webSessionLink(publicUrl ?? server.url, session.key)} to split songs in the browser`);
  } else {
    print(ctx, `The web page is at ${webSessionLink(publicUrl ?? server.url, '').replace(/#key=$/, '')}: the link printed when its key was made still works (serve --new-link makes a new one and ends the old)`);
  }
  ctx.stderr.write(`models: 4s → ${alias4}, 6s → ${alias6}; ${ctx.config.concurrency} job(s) at a time, ${ctx.config.maxMinutes === undefined ? 'sources of any length (streamed)' : `each of at most ${ctx.config.maxMinutes} minutes of audio`}\n`);
  const elsewhere = ctx.config.databaseUrl ? 'another node' : 'the next start';
  await runUntilSignalled(ctx, () => server.close(), {
    graceful: `running jobs finish, queued jobs stay queued for ${elsewhere}`,
    immediate: `running jobs resume on ${elsewhere}`,
  });
}

function safeName(fn: () => string): string {
  try {
    return fn();
  } catch {
    return '(none installed)';
  }
}
