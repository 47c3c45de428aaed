import type { FastifyReply, FastifyRequest } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import type { Principal } from './authorization.js';
import { forbidden, invalidField, unauthorized } from './errors.js';
import type { Hub } from './hub.js';
import type { Update } from './update.js';

/** Reference hub limits (hub.md, publish). */
export const PUBLISH_BODY_LIMIT = 1024 * 1024;
export const MAX_TOPICS = 1000;

// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point (hub.md: 400)
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;
const RESERVED_PATH = '/.well-known/mercure';
const publishers = new WeakMap<FastifyRequest, Principal>();

/**
 * onRequest: authenticate and authorize before the body is read (hub.md, publish). A request
 * authenticated by cookie must come from an allowed origin (CSRF: browsers attach cookies to
 * cross-site form posts).
 */
export async function authorizePublisher(hub: Hub, request: FastifyRequest): Promise<void> {
  const principal = await hub.authenticate(request, 'publisher');
  if (!principal) throw unauthorized('Authentication required');
  if (principal.tokenSource === 'cookie') checkPublishOrigin(hub.config.MERCURE_PUBLISH_ORIGINS, request);
  if (!hub.auth.hasPublishClaim(principal)) {
    throw forbidden('The token does not allow publishing');
  }
  publishers.set(request, principal);
}

function requestOrigin(request: FastifyRequest): string | undefined {
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== '' && origin !== 'null') return origin;
  const referer = request.headers.referer;
  if (typeof referer === 'string' && URL.canParse(referer)) return new URL(referer).origin;
  return undefined;
}

function checkPublishOrigin(allowed: readonly string[], request: FastifyRequest): void {
  const origin = requestOrigin(request);
  if (!origin) {
    throw invalidField('A cookie-authenticated publish request must carry an Origin or Referer header');
  }
  if (!allowed.includes('*') && !allowed.includes(origin)) {
    throw forbidden(`Origin ${origin} is not allowed to publish with a cookie (MERCURE_PUBLISH_ORIGINS)`);
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
    ...(suppliedId === null ? { idGenerated: true } : {}),
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
  hub: Hub,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<unknown> {
  const principal = publishers.get(request);
  if (!principal) throw unauthorized();
  const body = typeof request.body === 'string' ? request.body : '';
  const update = parsePublishForm(new URLSearchParams(body), generateUpdateId);
  if (!hub.auth.mayPublish(principal, update.topics)) {
    throw forbidden('The token does not allow publishing to every topic of this update');
  }
  const id = await hub.publish(update);
  return reply.code(200).type('text/plain; charset=utf-8').send(id);
}
