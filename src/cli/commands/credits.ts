import { StemsplitError } from '../../errors.js';
import { DEFAULT_ACCOUNT } from '../../store/index.js';
import { print, printJson, withStore, type CommandContext } from '../context.js';

export async function creditsShow(ctx: CommandContext, options: { account?: string; json?: boolean }): Promise<void> {
  const account = options.account ?? DEFAULT_ACCOUNT;
  // `balance` throws NOT_FOUND for an account that does not exist.
  const balance = await withStore(ctx, (data) => data.accounts.balance(account));
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

/** `limit` is checked by the command's declaration (1 to 10000); an unknown account is NOT_FOUND. */
export async function creditsHistory(ctx: CommandContext, options: { account?: string; limit: number; json?: boolean }): Promise<void> {
  const account = options.account ?? DEFAULT_ACCOUNT;
  const entries = await withStore(ctx, (data) => data.accounts.statement(account, options.limit));
  if (options.json) {
    printJson(ctx, { account, unit: 'seconds', entries });
    return;
  }
  for (const entry of entries) {
    const amount = (entry.amount > 0 ? `+${entry.amount}` : String(entry.amount)).padStart(8);
    print(ctx, `${entry.createdAt}  ${entry.kind.padEnd(6)} ${amount}  balance ${String(entry.balanceAfter).padEnd(8)} ${entry.note}`);
  }
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
