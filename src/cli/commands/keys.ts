import { StemsplitError } from '../../errors.js';
import { DEFAULT_ACCOUNT } from '../../store/index.js';
import { addWebSession, createWebSession, recordedPageOrigins } from '../../services/web-session.js';
import { pageOrigins, webSessionLink } from '../../net/page-links.js';
import { print, printJson, withStore, type CommandContext } from '../context.js';

export async function keysCreate(ctx: CommandContext, options: { name?: string; account?: string; json?: boolean }): Promise<void> {
  const created = await withStore(ctx, (data) => data.accounts.createKey(options.account ?? DEFAULT_ACCOUNT, options.name ?? 'cli'));
  if (options.json) {
    printJson(ctx, { id: created.id, key: created.key, account: created.account });
    return;
  }
  print(ctx, created.key);
  ctx.stderr.write(`Created API key ${created.id} for account "${created.account}". It is shown only this once: store it now.\n`);
}

export async function keysList(ctx: CommandContext, options: { all?: boolean; json?: boolean }): Promise<void> {
  const everyKey = await withStore(ctx, (data) => data.accounts.listKeys());
  // serve --new-link revokes web-session keys: revoked ones would bury the keys in use.
  const keys = options.all ? everyKey : everyKey.filter((k) => k.revokedAt === null);
  if (options.json) {
    printJson(
      ctx,
      keys.map((k) => ({ id: k.id, name: k.name, account: k.accountName, createdAt: k.createdAt, lastUsedAt: k.lastUsedAt, revokedAt: k.revokedAt })),
    );
    return;
  }
  const hidden = everyKey.length - keys.length;
  if (keys.length === 0) print(ctx, 'No active API keys. Create one with: stemsplit keys create');
  for (const key of keys) {
    const state = key.revokedAt ? `revoked ${key.revokedAt}` : 'active';
    // Kept to the minute: a key's use is written at most once a minute.
    const used = key.lastUsedAt ? `last used ${key.lastUsedAt.slice(0, 16)}Z` : 'never used';
    print(ctx, `${key.id}  ${key.accountName.padEnd(12)} ${key.name.padEnd(16)} ${key.createdAt}  ${used.padEnd(27)} ${state}`);
  }
  if (hidden > 0) ctx.stderr.write(`(${hidden} revoked key${hidden === 1 ? '' : 's'} not shown; --all shows them)\n`);
}

export async function keysRevoke(ctx: CommandContext, id: string): Promise<void> {
  if (!id) throw new StemsplitError('USAGE', 'keys revoke needs a key id (see: stemsplit keys list)');
  await withStore(ctx, (data) => data.accounts.revokeKey(id));
  print(ctx, `Revoked ${id}.`);
}

/**
 * `keys link`: the web page's link again, at each address the last `serve` on this data dir
 * recorded. Keys are kept only as hashes, so this makes a new web-session key, and revokes the
 * account's web-session keys it replaces (their links stop working), unless `--keep`.
 */
export async function keysLink(ctx: CommandContext, options: { account?: string; json?: boolean; keep?: boolean }): Promise<void> {
  const account = options.account ?? DEFAULT_ACCOUNT;
  const { origins, created } = await withStore(ctx, async (data) => {
    const recorded = await recordedPageOrigins(data);
    return {
      origins:
        recorded ?? pageOrigins({ host: ctx.config.host, port: ctx.config.port, publicUrl: ctx.config.publicUrl, tls: ctx.config.tls !== undefined }, {}),
      created: options.keep ? { ...(await addWebSession(data, account)), revoked: [] } : await createWebSession(data, account),
    };
  });
  const links = origins.map((origin) => webSessionLink(origin, created.key));
  if (options.json) {
    printJson(ctx, { id: created.id, account: created.account, links, revoked: created.revoked });
    return;
  }
  for (const link of links) print(ctx, link);
  const before = options.keep
    ? 'earlier links keep working (without --keep, keys link ends them)'
    : created.revoked.length > 0
      ? `the link it replaces no longer works (${created.revoked.join(', ')} revoked; --keep keeps earlier links)`
      : 'no earlier link to end';
  ctx.stderr.write(`A new web-session key ${created.id} for account "${created.account}"; ${before}.\n`);
}
