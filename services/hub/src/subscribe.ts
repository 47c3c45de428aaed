import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { Http2ServerResponse } from 'node:http2';
import { type ErrorReply, HeraldError, sendError } from '@herald/errors';
import type { Metrics } from '@herald/metrics';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { HubAuthorization } from './authorization.js';
import {
  asHubError,
  draining,
  legacyTopicParameter,
  matchersTooComplex,
  missingMatcher,
  patternTooLong,
  tooManyMatchers,
  unauthorized,
  unsupportedMatchType,
} from './errors.js';
import { type ReplayStart, readFirstReplayPage, replayHistory, resolveCursor } from './history-replay.js';
import { HUB_PATH } from './identity.js';
import { tenantOf } from './limits.js';
import type { Principal } from './principal.js';
import { queryParameters } from './query.js';
import { flat, OPENING_COMMENT, SSE_HEADERS, SSE_HEADERS_HTTP1 } from './sse.js';
import type { Subscriber } from './subscriber.js';
import type { TopicMatcher } from './topic-matcher.js';
import type { Transport } from './transport.js';
import type { StoredUpdate } from './update.js';

/** Reference hub limits (hub.md, subscribe). */
export const MAX_MATCHERS = 100;
export const MAX_PATTERN_BYTES = 4096;
/**
 * RE2 instructions one subscription's pattern matchers may compile to in total. A publish costs
 * each subscriber up to this × topic length steps per topic (topics are capped for patterns at
 * MAX_PATTERN_TOPIC_LENGTH), ~45 ms at worst, measured; 50 typical URL patterns fit (docs/hub.md,
 * "Limits").
 */
export const MAX_SUBSCRIPTION_PROGRAM_SIZE = 2000;

export interface RegisterOptions {
  readonly matchers: readonly TopicMatcher[];
  readonly principal: Principal | undefined;
  readonly response: ServerResponse;
  /** Snapshot the dispatch position now, and hold live updates until the replay ends. */
  readonly replay: boolean;
  /** Gives back the stream's slot of its tenant's limit, when it closes. */
  readonly releaseSlot?: () => void;
  /** The subscribe's request id and start (`performance.now()`), for its end (`releaseRequest`). */
  readonly requestId: string;
  readonly openedAt: number;
  /** Events carry `topics` fields (MERCURE_TOPICS_FIELD, a `match*` subscription). */
  readonly topicsField?: boolean;
}

/** This node's open streams, as the subscribe handler sees them (the hub implements it). */
export interface SubscriberRegistry {
  /** New subscribers are refused (503) while the node drains. */
  readonly isDraining: boolean;
  /** Registers a stream; synchronous, so registration and the replay snapshot happen together. */
  register(options: RegisterOptions): Subscriber;
}

/** What the subscribe handler uses, and nothing else. */
export interface SubscribeDependencies {
  readonly auth: Pick<HubAuthorization, 'authenticate' | 'compileMatcher'>;
  readonly transport: Pick<Transport, 'findPosition' | 'readHistory'>;
  readonly subscribers: SubscriberRegistry;
  /** MERCURE_ANONYMOUS or MERCURE_DEV. */
  readonly anonymousAllowed: boolean;
  /** MERCURE_LEGACY_CLAIMS: the 0.x `topic` parameter is read as a matcher. */
  readonly legacyClaims: boolean;
  /** MERCURE_TOPICS_FIELD: `topics` fields on the events of subscriptions using `match*`. */
  readonly topicsField: boolean;
  /**
   * Takes a stream slot of the subscriber's tenant (limits.ts): what gives it back (undefined
   * when no limit applies), or the 429 over the tenant's limit.
   */
  readonly acquireStream: (tenant: string) => Promise<(() => void) | undefined>;
  /** Counts events written by replays (`mercure_deliveries_total`). */
  readonly onReplayed: (count: number) => void;
}

/**
 * Query parameter names (lower-cased: names compare case-insensitively) and the matcher type each
 * one selects. `match_exact`/`match_urlpattern` are the Mercure 1.0 spellings (hub.md, decision).
 */
const MATCH_PARAMETERS: Readonly<Record<string, string>> = {
  match: 'Exact',
  matchexact: 'Exact',
  match_exact: 'Exact',
  matchurlpattern: 'URLPattern',
  match_urlpattern: 'URLPattern',
  matchregexp: 'Regexp',
  matchuritemplate: 'URITemplate',
};
const CURSOR_PARAMETERS = new Set(['lasteventid', 'last_event_id']);

export interface MatcherRequest {
  readonly matchType: string;
  readonly match: string;
  /** A 0.x `topic` parameter (legacy mode): a URI template or an exact topic. */
  readonly legacy?: boolean;
}

export interface SubscribeQuery {
  readonly matchers: MatcherRequest[];
  readonly lastEventId: string | undefined;
}

/** Parses the subscribe query; throws the protocol's 400/501 errors. Pure, for unit tests. */
export function parseSubscribeQuery(parameters: URLSearchParams, legacy: boolean): SubscribeQuery {
  const matchers: MatcherRequest[] = [];
  let lastEventId: string | undefined;
  for (const [name, value] of parameters) {
    const lower = name.toLowerCase();
    if (CURSOR_PARAMETERS.has(lower)) {
      lastEventId ??= value;
      continue;
    }
    let matchType: string | undefined;
    let isLegacy = false;
    if (lower.startsWith('match')) {
      matchType = MATCH_PARAMETERS[lower];
      if (!matchType) throw unsupportedMatchType();
    } else if (legacy && lower === 'topic') {
      // 0.x: a URI template, or an exact topic when it has no expression.
      matchType = 'URITemplate';
      isLegacy = true;
    } else {
      continue;
    }
    if (Buffer.byteLength(value) > MAX_PATTERN_BYTES) throw patternTooLong(MAX_PATTERN_BYTES);
    matchers.push({ matchType, match: value, ...(isLegacy ? { legacy: true } : {}) });
    if (matchers.length > MAX_MATCHERS) throw tooManyMatchers(MAX_MATCHERS);
  }
  if (matchers.length === 0) {
    const topicGiven = [...parameters.keys()].some((name) => name.toLowerCase() === 'topic');
    throw !legacy && topicGiven ? legacyTopicParameter() : missingMatcher();
  }
  return { matchers, lastEventId };
}

/**
 * The list of a subscription of one matcher (the usual one), one per compiled selector, shared by
 * every subscriber of it: not an array per idle subscriber (56 bytes of heap each). Selectors are
 * cached (matchers.ts); a list lives as long as its selector. `*` selectors are made per call and
 * get their own list.
 */
const singleMatcherLists = new WeakMap<TopicMatcher, readonly TopicMatcher[]>();

/** Compiles a subscription's matchers within the per-subscription program budget; throws 400s. */
function compileMatchers(
  auth: Pick<HubAuthorization, 'compileMatcher'>,
  requested: readonly MatcherRequest[],
): readonly TopicMatcher[] {
  let programSize = 0;
  const matchers = requested.map(({ match, matchType, legacy }) => {
    const selector = auth.compileMatcher(match, matchType, legacy);
    programSize += selector.programSize;
    if (programSize > MAX_SUBSCRIPTION_PROGRAM_SIZE) throw matchersTooComplex(MAX_SUBSCRIPTION_PROGRAM_SIZE);
    return selector;
  });
  const [only] = matchers;
  if (matchers.length !== 1 || only === undefined || only.isWildcard) return matchers;
  const shared = singleMatcherLists.get(only);
  if (shared) return shared;
  singleMatcherLists.set(only, matchers);
  return matchers;
}

/** GET/HEAD /.well-known/mercure: an SSE stream (hub.md, subscribe). */
export async function handleSubscribe(
  dependencies: SubscribeDependencies,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const { auth, transport, subscribers } = dependencies;
  if (subscribers.isDraining) throw draining();
  // Authenticate before compiling: patterns are client input and compiling costs CPU and memory,
  // so a request without a token on a hub without anonymous access compiles nothing (issue #8:
  // six unauthenticated requests with hostile patterns crashed a hub).
  const principal = await auth.authenticate(request, 'subscriber');
  if (!principal && !dependencies.anonymousAllowed) {
    throw unauthorized('Authentication required');
  }
  const query = parseSubscribeQuery(queryParameters(request.url), dependencies.legacyClaims);
  const matchers = compileMatchers(auth, query.matchers);
  const headerCursor = request.headers['last-event-id'];
  const cursor = typeof headerCursor === 'string' && headerCursor !== '' ? headerCursor : query.lastEventId;

  // The headers set so far (CORS): on the stream, and on a refusal written after the hijack.
  const replyHeaders: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) replyHeaders[name] = value;
  }
  const headers: OutgoingHttpHeaders = {
    ...replyHeaders,
    ...(request.raw.httpVersionMajor === 2 ? SSE_HEADERS : SSE_HEADERS_HTTP1),
  };
  if (request.method === 'HEAD') {
    reply.hijack();
    reply.raw.writeHead(200, headers);
    reply.raw.end();
    return;
  }

  // Over the tenant's limit: 429 before the stream opens. Taken last of the checks, so a request
  // refused for another reason holds no slot.
  const releaseSlot = await dependencies.acquireStream(tenantOf(principal, request));
  reply.hijack();
  const response = reply.raw;
  const openedAt = releaseRequest(reply);
  // Registration and snapshot happen together, synchronously: every update after the snapshot
  // reaches this subscriber live (buffered until the replay is written), every one up to it comes
  // from history. No gap, no duplicate (the reference hub's replay/live race fix).
  const subscriber = subscribers.register({
    matchers,
    principal,
    response,
    replay: cursor !== undefined,
    releaseSlot,
    requestId: request.id,
    openedAt,
    // A subscription of the 0.x `topic` parameter alone keeps the 0.x events (upstream's rule).
    topicsField: dependencies.topicsField && query.matchers.some((matcher) => !matcher.legacy),
  });
  // An HTTP/2 stream's socket is its connection's, set once for all its streams by the kit's
  // HTTP/2 listeners (h2c.ts, server.ts).
  if (request.raw.httpVersionMajor !== 2) request.raw.socket.setNoDelay(true);

  // The history reads the stream starts with come before its headers: a backend that cannot
  // serve them answers 503 (retry later), not a stream that opens and closes at once.
  let replay: { start: ReplayStart; firstPage: StoredUpdate[] } | undefined;
  if (cursor !== undefined) {
    try {
      const start = await resolveCursor(transport, subscriber, cursor, request.log);
      replay = { start, firstPage: await readFirstReplayPage(transport, subscriber, start.after) };
    } catch (error) {
      if (!subscriber.closed) refuse(response, replyHeaders, asHubError(error), request.log);
      subscriber.close('replay_failed');
      return;
    }
    headers['last-event-id'] = replay.start.precedingId;
    headers['mercure-last-event-id'] = replay.start.precedingId;
  }
  if (subscriber.closed) return;
  sendHead(response, headers);
  response.write(OPENING_COMMENT);
  if (!replay) return;
  try {
    await replayHistory(transport, subscriber, replay.start.after, replay.firstPage, dependencies.onReplayed);
  } catch (error) {
    request.log.error({ err: error }, 'history replay failed; closing the stream (the client resumes)');
    subscriber.close('replay_failed');
  }
}

/**
 * Sends the stream's 200 head. An HTTP/2 stream's goes to the stream itself: node's compatibility
 * `writeHead` would first copy every header into the response's own dictionary, kept for the
 * stream's life beside the stream's sent headers (~125 bytes of heap per idle HTTP/2 subscriber on
 * Node 20; docs/benchmarks.md, "Idle subscribers").
 */
function sendHead(response: ServerResponse | Http2ServerResponse, headers: OutgoingHttpHeaders): void {
  if ('stream' in response) {
    // As writeHead does: a stream the client reset is left alone (respond would throw).
    const { stream } = response;
    if (!stream.destroyed && !stream.closed) stream.respond({ ...headers, ':status': 200 });
    return;
  }
  response.writeHead(200, headers);
  flattenHead(response);
}

/**
 * Flattens the response head node:http keeps for the stream's whole life (`_header`, built line
 * by line: ~40 rope nodes, 1.3 KB of heap per idle subscriber; docs/benchmarks.md, "Idle
 * subscribers"). A Node without that field is left as it is.
 */
function flattenHead(response: ServerResponse): void {
  const head = (response as unknown as { _header?: unknown })._header;
  if (typeof head === 'string') flat(head);
}

/**
 * Lets fastify's Request, Reply and request logger go once the stream is hijacked (issue #14: about
 * 1.15 KB of heap per idle subscriber, docs/benchmarks.md). fastify keeps them for the stream's life
 * through its finish/error listener on the response, which at the end runs the onResponse hooks (the
 * `http_request_duration_seconds` sample) and logs "request completed". The stream's close does both
 * itself instead (`SubscriberShared.onResponseClosed`), from the little the subscriber keeps: the
 * request id and the start this returns (on `performance.now()`'s clock).
 */
function releaseRequest(reply: FastifyReply): number {
  const response = reply.raw;
  for (const event of ['finish', 'error'] as const) {
    for (const listener of response.listeners(event)) {
      if (listener.name === FASTIFY_RESPONSE_LISTENER) response.removeListener(event, listener as () => void);
    }
  }
  return performance.now() - reply.elapsedTime;
}

/**
 * What fastify's onResponse hook and its "request completed" log do at a request's end, for a
 * stream whose response closed: the subscribe route's duration sample and the log line.
 */
export function recordStreamEnd(
  requestDuration: Pick<Metrics['httpRequestDuration'], 'observe'>,
  log: FastifyBaseLogger,
  stream: { readonly requestId: string; readonly openedAt: number },
  statusCode: number,
): void {
  const responseTime = performance.now() - stream.openedAt;
  // The label the metrics plugin gives this route (never the URL: it carries the query).
  requestDuration.observe(
    { method: 'GET', route: HUB_PATH, status_code: String(statusCode) },
    responseTime / 1000,
  );
  log.info({ reqId: stream.requestId, res: { statusCode }, responseTime }, 'request completed');
}

/** The name of fastify 5's per-reply listener (lib/reply.js, setupResponseListeners). */
const FASTIFY_RESPONSE_LISTENER = 'onResFinished';

/**
 * Answers a subscribe that failed after the hijack but before its stream opened, as the error
 * handler answers every other request (`sendError`, plain text): the same status and public text.
 */
function refuse(
  response: ServerResponse,
  headers: OutgoingHttpHeaders,
  error: unknown,
  log: FastifyBaseLogger,
): void {
  if (error instanceof HeraldError && error.expose) {
    log.info({ status: error.statusCode, code: error.code }, error.message);
  } else {
    log.error({ err: error }, 'subscribe failed before its stream opened');
  }
  let status = 500;
  const raw: ErrorReply = {
    code(statusCode) {
      status = statusCode;
      return raw;
    },
    type(contentType) {
      headers['content-type'] = contentType;
      return raw;
    },
    header(name, value) {
      headers[name] = value;
      return raw;
    },
    send(payload) {
      response.writeHead(status, headers);
      response.end(payload);
      return raw;
    },
  };
  sendError(raw, error, 'text');
}
