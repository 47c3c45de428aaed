import { uuidv7 } from '@herald/ids';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { HubAuthorization } from './authorization.js';
import { forbidden, invalidField, originRefused, originRequired, unauthorized } from './errors.js';
import { tenantOf } from './limits.js';
import type { Principal } from './principal.js';
import type { Update } from './update.js';

/** Reference hub limits (hub.md, publish). */
export const PUBLISH_BODY_LIMIT = 1024 * 1024;
export const MAX_TOPICS = 1000;

/**
 * C0, DEL and C1 controls: the set refused in subscribe patterns and claims (Mercure draft §2),
 * so a topic that could never be matched is never stored (hub.md: 400). U+0085 (NEL) is a line
 * break to some parsers, and a CR/LF in an id would split the SSE `id:` line.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f]/;
const RESERVED_PATH = '/.well-known/mercure';
const publishers = new WeakMap<FastifyRequest, Principal>();

/** What the publish route uses, and nothing else. */
export interface PublishDependencies {
  readonly auth: Pick<HubAuthorization, 'authenticate' | 'hasPublishClaim' | 'mayPublish'>;
  /** MERCURE_PUBLISH_ORIGINS: where a cookie-authenticated publish may come from. */
  readonly publishOrigins: readonly string[];
  /** Appends to history and fans out (the hub counts it); resolves with the update's id. */
  readonly publish: (update: Update) => Promise<string>;
  /** Takes one update from the publisher's rate (limits.ts); throws the 429 when it has none left. */
  readonly takePublish: (tenant: string) => Promise<void>;
}

/**
 * onRequest: authenticate and authorize before the body is read (hub.md, publish). A request
 * authenticated by cookie must come from an allowed origin (CSRF: browsers attach cookies to
 * cross-site form posts).
 */
export async function authorizePublisher(
  { auth, publishOrigins }: PublishDependencies,
  request: FastifyRequest,
): Promise<void> {
  const principal = await auth.authenticate(request, 'publisher');
  if (!principal) throw unauthorized('Authentication required');
  if (principal.tokenSource === 'cookie') checkPublishOrigin(publishOrigins, request);
  if (!auth.hasPublishClaim(principal)) {
    throw forbidden('The token does not allow publishing');
  }
  publishers.set(request, principal);
}

/**
 * The origin a cookie-authenticated publish came from. An Origin header, when present, is the
 * answer, even `null`: browsers send `null` for sandboxed frames, `data:` and `file:` documents
 * and some cross-origin redirects, exactly the contexts a CSRF attacker can create, and such a
 * request usually carries a Referer naming an allowed page (issue #8). Referer is read only when
 * no Origin was sent at all (older browsers on same-origin POSTs).
 */
function requestOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (origin !== undefined) return origin;
  const referer = request.headers.referer;
  // An opaque Referer origin (`data:`, …) serialises as "null" and is refused like Origin: null.
  if (typeof referer === 'string' && URL.canParse(referer)) return new URL(referer).origin;
  return undefined;
}

function checkPublishOrigin(allowed: readonly string[], request: FastifyRequest): void {
  const origin = requestOrigin(request);
  if (origin === undefined) throw originRequired();
  if (origin === 'null' || origin === '') {
    // Even with `*`: an opaque origin cannot be allowed, it is not anyone's in particular.
    throw originRefused('A cookie-authenticated publish from an opaque origin (Origin: null) is refused');
  }
  if (!allowed.includes('*') && !allowed.includes(origin)) {
    throw originRefused(`This origin is not allowed to publish with a cookie (MERCURE_PUBLISH_ORIGINS)`);
  }
}

function isReservedTopic(topic: string): boolean {
  const path = URL.canParse(topic) ? new URL(topic).pathname : topic.split(/[?#]/)[0];
  return path === RESERVED_PATH || (path?.startsWith(`${RESERVED_PATH}/`) ?? false);
}

/** Validates the form fields into an update; throws 400s. Pure, for unit tests. */
export function parsePublishForm(form: URLSearchParams, generateId: () => string): Update {
  const topics = form.getAll('topic');
  if (topics.length === 0) throw invalidField('Missing "topic" field');
  if (topics.length > MAX_TOPICS) throw invalidField(`Too many topics (at most ${MAX_TOPICS})`);
  for (const topic of topics) {
    if (topic === '') throw invalidField('Empty topic');
    if (CONTROL_CHARACTERS.test(topic)) throw invalidField('Control characters are not allowed in topics');
    if (isReservedTopic(topic))
      throw invalidField('Topics under /.well-known/mercure are reserved for the hub');
  }
  const suppliedId = form.get('id');
  if (suppliedId !== null) {
    if (suppliedId === '') throw invalidField('Empty "id" field');
    if (suppliedId.startsWith('#')) throw invalidField('"id" must not start with #');
    if (suppliedId === 'earliest') throw invalidField('"earliest" is a reserved id');
    if (CONTROL_CHARACTERS.test(suppliedId)) throw invalidField('Control characters are not allowed in ids');
  }
  const type = form.get('type');
  if (type !== null) {
    if (type === 'mercure') throw invalidField('The "mercure" type is reserved for subscription events');
    if (CONTROL_CHARACTERS.test(type)) throw invalidField('Control characters are not allowed in "type"');
  }
  const retryText = form.get('retry');
  let retry: number | undefined;
  if (retryText !== null) {
    if (!/^\d{1,15}$/.test(retryText)) throw invalidField('"retry" must be a non-negative integer');
    retry = Number(retryText);
  }
  return {
    id: suppliedId ?? generateId(),
    topics,
    data: form.get('data') ?? '',
    private: form.has('private'),
    ...(type !== null && type !== '' ? { type } : {}),
    ...(retry !== undefined ? { retry } : {}),
  };
}

/** Generated ids are `urn:uuid:<UUIDv7>` (time-ordered, hub.md). */
export function generateUpdateId(): string {
  return `urn:uuid:${uuidv7()}`;
}

/** POST /.well-known/mercure. */
export async function handlePublish(
  { auth, publish, takePublish }: PublishDependencies,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  const principal = publishers.get(request);
  if (!principal) throw unauthorized();
  const body = typeof request.body === 'string' ? request.body : '';
  const update = parsePublishForm(new URLSearchParams(body), generateUpdateId);
  if (!auth.mayPublish(principal, update.topics)) {
    throw forbidden('The token does not allow publishing to every topic of this update');
  }
  // Last check before the write: a refused or malformed publish spends nothing.
  await takePublish(tenantOf(principal, request));
  const id = await publish(update);
  return reply.code(200).type('text/plain; charset=utf-8').send(id);
}
