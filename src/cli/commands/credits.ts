import { StemsplitError } from '../../errors.js';
import { DEFAULT_ACCOUNT } from '../../store/index.js';
import { print, printJson, withStore, type CommandContext } from '../context.js';

export async function creditsShow(ctx: CommandContext, options: { account?: string; json?: boolean }): Promise<void> {
  const account = options.account ?? DEFAULT_ACCOUNT;
  const balance = await withStore(ctx, (data) => {
    if (!data.accounts.find(account)) throw new StemsplitError('NOT_FOUND', `no account "${account}"`);
    return data.accounts.balance(account);
  });
  if (options.json) printJson(ctx, { account, balance, unit: 'seconds' });
  else print(ctx, `${account}: ${balance} credits (seconds of audio)`);
}

export async function creditsGrant(ctx: CommandContext, seconds: string, options: { account?: string; json?: boolean }): Promise<void> {
  const amount = Number(seconds);
  if (!/^\d+$/.test(seconds) || !Number.isSafeInteger(amount) || amount <= 0) {
    throw new StemsplitError('USAGE', `credits grant needs a positive whole number of seconds, got "${seconds}"`);
  }
  const account = options.account ?? DEFAULT_ACCOUNT;
  const balance = await withStore(ctx, (data) => data.accounts.grant(account, amount, 'granted with the CLI'));
  if (options.json) printJson(ctx, { account, granted: amount, balance, unit: 'seconds' });
  else print(ctx, `Granted ${amount} credits to ${account}; balance ${balance}.`);
}

export async function webhookSecretRotate(ctx: CommandContext, options: { account?: string; json?: boolean }): Promise<void> {
  const account = options.account ?? DEFAULT_ACCOUNT;
  const secret = await withStore(ctx, (data) => data.accounts.rotateWebhookSecret(account));
  if (options.json) {
    printJson(ctx, { account, secret });
    return;
  }
  print(ctx, secret);
  ctx.stderr.write(`New webhook signing secret for "${account}". It is shown only this once; the old one no longer signs.\n`);
}
