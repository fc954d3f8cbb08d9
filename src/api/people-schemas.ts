/**
 * The schemas of a studio's people (issue 48): the admin-only additions for keys, people,
 * credits grants and invites. Split from schemas.ts, whose shared pieces they use.
 */
import { z } from '@hono/zod-openapi';
import { count, isoTime, text } from './schemas.js';

const AccountName = z.string().regex(/^[\w.-]{1,64}$/, 'must be 1-64 letters, digits, _ . or -');
const RoleName = z.enum(['admin', 'member']);

export const ApiKeyResource = z
  .object({
    id: z.string().regex(/^key_/),
    name: z.string(),
    account: z.string(),
    createdAt: isoTime,
    lastUsedAt: isoTime.nullable().openapi({ description: 'The latest use, kept to the minute (written at most once a minute); null: never used.' }),
    revokedAt: isoTime.nullable(),
  })
  .strict()
  .openapi('ApiKey');

export const ApiKeyList = z
  .object({ items: z.array(ApiKeyResource) })
  .strict()
  .openapi('ApiKeyList');

export const KeyRequest = z
  .object({
    account: AccountName,
    name: text(64).optional().openapi({ description: 'A label for the key; "api" by default.' }),
    role: RoleName.optional().openapi({
      description: 'The role of the account when this request makes it (member by default); an existing account keeps its role.',
    }),
  })
  .strict()
  .openapi('KeyRequest');

export const KeyCreated = z
  .object({
    id: z.string().regex(/^key_/),
    key: z.string().openapi({ description: 'The API key itself: shown this once, never stored (only its SHA-256).' }),
    account: z.string(),
    role: RoleName,
  })
  .strict()
  .openapi('KeyCreated');

export const Person = z
  .object({
    account: z.string(),
    role: RoleName,
    balance: count,
    createdAt: isoTime,
    activeKeys: count,
    lastUsedAt: isoTime.nullable(),
  })
  .strict()
  .openapi('Person');

export const PeopleList = z
  .object({ items: z.array(Person) })
  .strict()
  .openapi('PeopleList');

export const GrantRequest = z
  .object({ account: AccountName, seconds: z.int().min(1).max(1_000_000_000).openapi({ description: 'Credits to add, in seconds of audio.' }) })
  .strict()
  .openapi('GrantRequest');

export const GrantResult = z
  .object({ account: z.string(), balance: count, unit: z.literal('seconds') })
  .strict()
  .openapi('GrantResult');

export const InviteRequest = z
  .object({
    account: AccountName,
    credits: z
      .int()
      .min(0)
      .max(1_000_000_000)
      .optional()
      .openapi({ description: 'Credits (seconds of audio) granted to the account with the invite; 0 by default.' }),
    expiresInSeconds: z
      .int()
      .min(60)
      .max(30 * 24 * 3600)
      .optional()
      .openapi({ description: 'How long the invite may be used; a day by default.' }),
  })
  .strict()
  .openapi('InviteRequest');

export const InviteCreated = z
  .object({
    id: z.string().regex(/^inv_/),
    invite: z.string().openapi({ description: 'The one-time invite: shown this once, never stored (only its SHA-256).' }),
    account: z.string(),
    expiresAt: isoTime,
    url: z.string().openapi({
      description: "The web page's address with the invite in its fragment (which browsers never send): open it once to get the account's own key.",
    }),
  })
  .strict()
  .openapi('InviteCreated');

export const InviteExchange = z
  .object({ invite: z.string().min(1).max(200) })
  .strict()
  .openapi('InviteExchange');
