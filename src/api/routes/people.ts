/**
 * The studio's people (issue 48, additions to the v1 API): an admin's key lists, makes and revokes
 * keys, invites people and grants credits; a member's key gets 403 FORBIDDEN. The invite exchange
 * needs no key: the invite is the credential, good once.
 */
import { createRoute, z, type OpenAPIHono } from '@hono/zod-openapi';
import type { PeopleService } from '../../services/people.js';
import { INVITE_TTL_SECONDS } from '../../services/people.js';
import type { ApiKeyInfo, DataStore } from '../../store/index.js';
import { inviteLink } from '../../net/page-links.js';
import { successBody } from '../envelope.js';
import type { AppEnv } from '../env.js';
import { failure, json, ok, openApiRoutes } from '../openapi.js';
import {
  ApiKeyList,
  ApiKeyResource,
  GrantRequest,
  GrantResult,
  InviteCreated,
  InviteExchange,
  InviteRequest,
  KeyCreated,
  KeyRequest,
  PeopleList,
} from '../people-schemas.js';

const ADMIN_ONLY = 'Only an admin key: a member key gets 403 FORBIDDEN.';
const refusals = {
  401: failure('Missing or invalid API key.'),
  403: failure("A member's key: only the studio's admin manages people."),
};
const body = <T extends z.ZodType>(schema: T) => ({ body: { required: true, content: json(schema) } });

const listPeopleRoute = createRoute({
  method: 'get',
  path: '/accounts',
  operationId: 'listAccounts',
  description: `The studio's people: every account with its role, balance, working keys and their latest use. ${ADMIN_ONLY}`,
  responses: { 200: ok('The accounts, oldest first.', PeopleList), ...refusals },
});
const listKeysRoute = createRoute({
  method: 'get',
  path: '/keys',
  operationId: 'listKeys',
  description: `Every API key (never the keys themselves), revoked ones too. ${ADMIN_ONLY}`,
  responses: { 200: ok('The keys.', ApiKeyList), ...refusals },
});
const createKeyRoute = createRoute({
  method: 'post',
  path: '/keys',
  operationId: 'createKey',
  description: `A new key of an account (made when new, a member unless \`role\` says admin), shown once. ${ADMIN_ONLY}`,
  request: body(KeyRequest),
  responses: { 200: ok('The key, shown this once.', KeyCreated), ...refusals, 422: failure('Invalid body.') },
});
const revokeKeyRoute = createRoute({
  method: 'delete',
  path: '/keys/{keyId}',
  operationId: 'revokeKey',
  description: `Revokes a key: it gets 401 from then on, and the stem URLs it fetched stop working at once. Revoking a revoked key answers it as it is. ${ADMIN_ONLY}`,
  request: { params: z.object({ keyId: z.string() }) },
  responses: { 200: ok('The revoked key.', ApiKeyResource), ...refusals, 404: failure('No such key.'), 422: failure('The key making the request.') },
});
const grantRoute = createRoute({
  method: 'post',
  path: '/credits/grants',
  operationId: 'grantCredits',
  description: `Adds credits (seconds of audio) to an account, written to its ledger. ${ADMIN_ONLY}`,
  request: body(GrantRequest),
  responses: { 200: ok("The account's new balance.", GrantResult), ...refusals, 404: failure('No such account.'), 422: failure('Invalid body.') },
});
const inviteRoute = createRoute({
  method: 'post',
  path: '/invites',
  operationId: 'createInvite',
  description: `A one-time invite to an account (made, a member, when new), with credits granted to it if asked: the page at \`url\` exchanges it for the person's own key. ${ADMIN_ONLY}`,
  request: body(InviteRequest),
  responses: { 200: ok('The invite, shown this once.', InviteCreated), ...refusals, 422: failure('Invalid body.') },
});
const exchangeRoute = createRoute({
  method: 'post',
  path: '/invites/exchange',
  operationId: 'exchangeInvite',
  description:
    'Exchanges a one-time invite for a new key of its account (no API key needed: the invite is the credential). Used once, or past its time, it answers 401.',
  security: [],
  request: body(InviteExchange),
  responses: {
    200: ok("The person's own key, shown this once.", KeyCreated),
    401: failure('Not an invite of this server, already used, or expired.'),
    422: failure('Invalid body.'),
  },
});

function presentKey(key: ApiKeyInfo): z.output<typeof ApiKeyResource> {
  return { id: key.id, name: key.name, account: key.accountName, createdAt: key.createdAt, lastUsedAt: key.lastUsedAt, revokedAt: key.revokedAt };
}

export function peopleRoutes(people: PeopleService): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  app.openapi(listPeopleRoute, async (c) => c.json(successBody({ items: await people.people(c.get('principal')) }), 200));
  app.openapi(listKeysRoute, async (c) => c.json(successBody({ items: (await people.keys(c.get('principal'))).map(presentKey) }), 200));
  app.openapi(createKeyRoute, async (c) => {
    const request = c.req.valid('json');
    const created = await people.createKey(c.get('principal'), request.account, request.name ?? 'api', request.role ?? 'member');
    return c.json(successBody({ id: created.id, key: created.key, account: created.account, role: created.role }), 200);
  });
  app.openapi(revokeKeyRoute, async (c) => c.json(successBody(presentKey(await people.revokeKey(c.get('principal'), c.req.valid('param').keyId))), 200));
  app.openapi(grantRoute, async (c) => {
    const { account, seconds } = c.req.valid('json');
    return c.json(successBody({ account, balance: await people.grant(c.get('principal'), account, seconds), unit: 'seconds' as const }), 200);
  });
  app.openapi(inviteRoute, async (c) => {
    const request = c.req.valid('json');
    const created = await people.invite(c.get('principal'), request.account, request.expiresInSeconds ?? INVITE_TTL_SECONDS, request.credits ?? 0);
    return c.json(successBody({ ...created, url: inviteLink(c.get('publicBase'), created.invite) }), 200);
  });
  return app;
}

/** The one unauthenticated route of the people API. */
export function inviteExchangeRoutes(data: Pick<DataStore, 'invites'>): OpenAPIHono<AppEnv> {
  const app = openApiRoutes();
  app.openapi(exchangeRoute, async (c) => {
    const created = await data.invites.exchange(c.req.valid('json').invite);
    return c.json(successBody({ id: created.id, key: created.key, account: created.account, role: created.role }), 200);
  });
  return app;
}
