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

export async function keysList(ctx: CommandContext, options: { json?: boolean }): Promise<void> {
  const keys = await withStore(ctx, (data) => data.accounts.listKeys());
  if (options.json) {
    printJson(ctx, keys.map((k) => ({ id: k.id, name: k.name, account: k.accountName, createdAt: k.createdAt, revokedAt: k.revokedAt })));
    return;
  }
  if (keys.length === 0) {
    print(ctx, 'No API keys. Create one with: stemsplit keys create');
    return;
  }
  for (const key of keys) {
    const state = key.revokedAt ? `revoked ${key.revokedAt}` : 'active';
    print(ctx, `${key.id}  ${key.accountName.padEnd(12)} ${key.name.padEnd(16)} ${key.createdAt}  ${state}`);
  }
}

export async function keysRevoke(ctx: CommandContext, id: string): Promise<void> {
  if (!id) throw new StemsplitError('USAGE', 'keys revoke needs a key id (see: stemsplit keys list)');
  await withStore(ctx, (data) => data.accounts.revokeKey(id));
  print(ctx, `Revoked ${id}.`);
}
