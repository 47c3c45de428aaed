import { createHash } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HubAuthorization } from './authorization.js';
import { forbidden, notFound, unauthorized } from './errors.js';
import type { HubIdentity } from './identity.js';
import type { Subscriber } from './subscriber.js';
import type { SubscriptionRecord, Transport } from './transport.js';
import type { Update } from './update.js';

export const SUBSCRIPTIONS_PATH = '/.well-known/mercure/subscriptions';
const CONTEXT = 'https://mercure.rocks/';

/** `/.well-known/mercure/subscriptions/{matchType}/{match}/{subscriber}`, each part percent-encoded. */
export function subscriptionTopic(matchType: string, match: string, subscriber: string): string {
  return `${SUBSCRIPTIONS_PATH}/${encodeURIComponent(matchType)}/${encodeURIComponent(match)}/${encodeURIComponent(subscriber)}`;
}

/** The registry entries of one subscriber: one per matcher, with the payload its token selects. */
export function subscriptionRecords(
  auth: Pick<HubAuthorization, 'selectPayload'>,
  subscriber: Pick<Subscriber, 'iri' | 'matchers' | 'principal'>,
): SubscriptionRecord[] {
  return subscriber.matchers.map((matcher) => {
    const payload = auth.selectPayload(subscriber.principal, matcher.matchType, matcher.match);
    return {
      id: subscriptionTopic(matcher.matchType, matcher.match, subscriber.iri),
      matchType: matcher.matchType,
      match: matcher.match,
      subscriber: subscriber.iri,
      ...(payload !== undefined ? { payload } : {}),
    };
  });
}

interface SubscriptionDocument {
  '@context'?: string;
  id: string;
  type: 'Subscription';
  matchType: string;
  match: string;
  subscriber: string;
  active: boolean;
  payload?: unknown;
}

function subscriptionDocument(
  record: SubscriptionRecord,
  active: boolean,
  withContext: boolean,
): SubscriptionDocument {
  return {
    ...(withContext ? { '@context': CONTEXT } : {}),
    id: record.id,
    type: 'Subscription',
    matchType: record.matchType,
    match: record.match,
    subscriber: record.subscriber,
    active,
    ...(record.payload !== undefined ? { payload: record.payload } : {}),
  };
}

/** The private `mercure`-typed update announcing a subscription's start or end (hub.md). */
export function subscriptionEvent(id: string, record: SubscriptionRecord, active: boolean): Update {
  return {
    id,
    topics: [record.id],
    data: JSON.stringify(subscriptionDocument(record, active, true)),
    private: true,
    type: 'mercure',
  };
}

/** What the subscriptions API uses, and nothing else. */
export interface SubscriptionsApiDependencies {
  readonly auth: Pick<HubAuthorization, 'authenticate' | 'canReceive'>;
  readonly transport: Pick<Transport, 'listSubscriptions' | 'lastEventId'>;
  readonly identity: Pick<HubIdentity, 'absolute' | 'linkTarget'>;
}

interface SubscriptionsParams {
  matchType?: string;
  match?: string;
  subscriber?: string;
}

/**
 * The resource's canonical path, rebuilt from the matched route's parameters and encoded as the
 * subscription topics are. Never the raw request target: with an absolute-form target
 * (`GET https://tenant1.example.com/.well-known/mercure/subscriptions`) that is a URL the
 * client chose, and a claim naming that host matched it (issue #8, defect 4).
 */
export function subscriptionsResourcePath({ matchType, match, subscriber }: SubscriptionsParams): string {
  let path = SUBSCRIPTIONS_PATH;
  for (const part of [matchType, match, subscriber]) {
    if (part === undefined) break;
    path += `/${encodeURIComponent(part)}`;
  }
  return path;
}

/**
 * GET /.well-known/mercure/subscriptions[/{matchType}[/{match}[/{subscriber}]]]: the cluster-wide
 * registry. Access needs a token whose `subscribe` claim matches the resource, named as the hub
 * names it: its canonical path, or that path under the hub's own URL (MERCURE_PUBLIC_URL, else the
 * fixed `http://mercure.invalid` base), never under a host the request names (docs/hub.md).
 */
export async function handleSubscriptionsApi(
  { auth, transport, identity }: SubscriptionsApiDependencies,
  request: FastifyRequest<{ Params: SubscriptionsParams }>,
  reply: FastifyReply,
): Promise<unknown> {
  const principal = await auth.authenticate(request, 'subscriber');
  if (!principal) throw unauthorized('Authentication required');
  const path = subscriptionsResourcePath(request.params);
  if (!auth.canReceive(principal, [path, identity.absolute(path)]))
    throw forbidden('The token does not allow this subscriptions resource');

  const { matchType, match, subscriber } = request.params;
  const [records, lastEventID] = await Promise.all([transport.listSubscriptions(), transport.lastEventId()]);
  const selected = records
    .filter(
      (record) =>
        (matchType === undefined || record.matchType.toLowerCase() === matchType.toLowerCase()) &&
        (match === undefined || record.match === match) &&
        (subscriber === undefined || record.subscriber === subscriber),
    )
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

  let document: unknown;
  if (subscriber !== undefined) {
    const [record] = selected;
    if (!record) throw notFound();
    document = { ...subscriptionDocument(record, true, true), lastEventID: lastEventID ?? 'earliest' };
  } else {
    document = {
      '@context': CONTEXT,
      id: path,
      type: 'Subscriptions',
      subscriptions: selected.map((record) => subscriptionDocument(record, true, false)),
      lastEventID: lastEventID ?? 'earliest',
    };
  }
  const body = JSON.stringify(document);
  const etag = `"${createHash('sha1').update(body).digest('base64url')}"`;
  reply.header('content-type', 'application/ld+json');
  reply.header('etag', etag);
  reply.header('link', `<${identity.linkTarget}>; rel="mercure"`);
  if (request.headers['if-none-match'] === etag) return reply.code(304).send();
  return reply.send(body);
}
