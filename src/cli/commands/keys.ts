import { StemsplitError } from '../../errors.js';
import { DEFAULT_ACCOUNT } from '../../store/index.js';
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
  // Each serve start revokes the previous web-session key: those would bury the keys in use.
  const keys = options.all ? everyKey : everyKey.filter((k) => k.revokedAt === null);
  if (options.json) {
    printJson(ctx, keys.map((k) => ({ id: k.id, name: k.name, account: k.accountName, createdAt: k.createdAt, revokedAt: k.revokedAt })));
    return;
  }
  const hidden = everyKey.length - keys.length;
  if (keys.length === 0) print(ctx, 'No active API keys. Create one with: stemsplit keys create');
  for (const key of keys) {
    const state = key.revokedAt ? `revoked ${key.revokedAt}` : 'active';
    print(ctx, `${key.id}  ${key.accountName.padEnd(12)} ${key.name.padEnd(16)} ${key.createdAt}  ${state}`);
  }
  if (hidden > 0) ctx.stderr.write(`(${hidden} revoked key${hidden === 1 ? '' : 's'} not shown; --all shows them)\n`);
}

export async function keysRevoke(ctx: CommandContext, id: string): Promise<void> {
  if (!id) throw new StemsplitError('USAGE', 'keys revoke needs a key id (see: stemsplit keys list)');
  await withStore(ctx, (data) => data.accounts.revokeKey(id));
  print(ctx, `Revoked ${id}.`);
}
