import type { FastifyInstance, FastifyReply } from 'fastify';
import { ack, parseAckBody, parseBatchAckBody } from '../ack.js';
import type { BrokerContext } from '../context.js';
import { invalidRequest } from '../errors.js';
import { extendLease, parseExtendBody } from '../extend-lease.js';
import { namespaceAndTask } from '../identifiers.js';
import { TEMPLATE_VARIABLES, unknownTemplateVariables } from '../outbox.js';
import { type AnswerHold, parsePopQuery, pop, popResponseBody } from '../pop.js';
import { parseFilteredPopQuery, popFiltered } from '../pop-filtered.js';
import { parsePushBody, push } from '../push.js';
import { type BridgeEvents, DEFAULT_QUEUE_OPTIONS, type PopResult, type QueueOptions } from '../storage.js';
import { parseTransactionBody, runTransaction } from '../transaction.js';
import { boundedString, isObject, LIMITS, name, optionalString } from '../validation.js';
import { READ_WRITE, WRITE_ONLY } from './access.js';
import { sendJsonText } from './common.js';
import { ackResultsBody, leaseExtensionBody, pushResultsBody, transactionResultsBody } from './wire.js';

function parseQueueOptions(raw: unknown, hubConfigured: boolean): Partial<QueueOptions> {
  if (raw === undefined || raw === null) return {};
  if (!isObject(raw)) throw invalidRequest('options must be an object');
  const options: Record<string, number | boolean | string> = {};
  for (const [key, value] of Object.entries(raw)) {
    if (!(key in DEFAULT_QUEUE_OPTIONS)) continue;
    const expected = typeof DEFAULT_QUEUE_OPTIONS[key as keyof QueueOptions];
    if (key === 'bridgeTopic') {
      options[key] = parseBridgeTopic(value, hubConfigured);
      continue;
    }
    if (key === 'bridgeOn') {
      if (!BRIDGE_EVENTS.includes(value as BridgeEvents))
        throw invalidRequest(`options.bridgeOn must be one of ${BRIDGE_EVENTS.join(', ')}`);
      options[key] = value as BridgeEvents;
      continue;
    }
    if (expected === 'boolean') {
      if (typeof value !== 'boolean') throw invalidRequest(`options.${key} must be a boolean`);
    } else if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > 2_147_483_647) {
      throw invalidRequest(`options.${key} must be a non-negative integer`);
    }
    options[key] = value;
  }
  if (options.leaseTime === 0) throw invalidRequest('options.leaseTime must be at least 1 second');
  return options as Partial<QueueOptions>;
}

const BRIDGE_EVENTS: readonly BridgeEvents[] = ['push', 'completed', 'both'];

/** `options.bridgeTopic`: '' (not bridged) or a topic template (docs/broker-outbox.md). */
function parseBridgeTopic(value: unknown, hubConfigured: boolean): string {
  if (typeof value !== 'string') throw invalidRequest('options.bridgeTopic must be a string');
  if (value === '') return value;
  boundedString(value, 'options.bridgeTopic', LIMITS.maxTopicTemplateLength);
  const unknown = unknownTemplateVariables(value);
  if (unknown.length > 0)
    throw invalidRequest(
      `options.bridgeTopic names {${unknown[0]}}: a template may name ${TEMPLATE_VARIABLES.map((name) => `{${name}}`).join(', ')}`,
    );
  if (!hubConfigured)
    throw invalidRequest('options.bridgeTopic needs a hub: this broker has no BROKER_HUB_URL');
  return value;
}

/** Runs a pop until it answers or its client goes away (the response socket closes first). */
async function answerPop(
  reply: FastifyReply,
  group: string,
  run: (signal: AbortSignal, hold: AnswerHold) => Promise<PopResult | undefined>,
): Promise<FastifyReply> {
  const aborted = new AbortController();
  const onClose = () => {
    if (!reply.raw.writableFinished) aborted.abort();
  };
  // The answer's room in the body budget goes back once the response is sent (or its client gone).
  const hold: AnswerHold = (release) => {
    if (reply.raw.closed) release();
    else reply.raw.once('close', release);
  };
  reply.raw.on('close', onClose);
  try {
    const result = await run(aborted.signal, hold);
    if (!result) return reply.code(204).send();
    return sendJsonText(reply, 200, popResponseBody(result, group));
  } finally {
    reply.raw.off('close', onClose);
  }
}

/**
 * The hot routes log at warn and above only: at thousands of requests per second fastify's two
 * info lines per request cost ~5% of push throughput (batch 100, more at batch 1), and
 * `http_request_duration_seconds` already counts them. Errors are still logged.
 */
const HOT_ROUTE = { logLevel: 'warn' } as const;
const HOT_WRITE_ONLY = { ...HOT_ROUTE, ...WRITE_ONLY } as const;
const HOT_READ_WRITE = { ...HOT_ROUTE, ...READ_WRITE } as const;

/** Configure, push, pop, ack, transaction, lease extension: HTTP parsing and mapping only. */
export function registerDataPlaneRoutes(app: FastifyInstance, context: BrokerContext): void {
  app.post('/api/v1/configure', READ_WRITE, async (request) => {
    const body = request.body;
    if (!isObject(body)) throw invalidRequest('body must be a JSON object');
    // Queen answers 200 to an empty name (its client's load test relies on it). No message can
    // be stored under that name here (push refuses it), so there is nothing for the options to
    // govern: they are validated and echoed, and nothing is stored (docs/broker-queen.md, "Queen
    // compatibility").
    const queue = body.queue === '' ? '' : name(body.queue, 'queue');
    const derived = namespaceAndTask(queue);
    const names = {
      namespace: optionalString(body.namespace, 'namespace') ?? derived.namespace,
      task: optionalString(body.task, 'task') ?? derived.task,
    };
    const options = parseQueueOptions(body.options, context.hubConfigured);
    if (queue === '')
      return { configured: true, queue, ...names, options: { ...DEFAULT_QUEUE_OPTIONS, ...options } };
    context.encryption.checkConfigure(queue, options.encryptionEnabled);
    const info = await context.storage.catalog.configure(queue, options, names);
    context.encryption.remember(queue, info.options.encryptionEnabled);
    return {
      configured: true,
      queue,
      namespace: info.namespace,
      task: info.task,
      options: info.options,
    };
  });

  app.post('/api/v1/push', HOT_WRITE_ONLY, async (request, reply) => {
    const items = parsePushBody(request.body, request.identity?.sub, context.maxPayloadBytes);
    await context.limits.takePush(items);
    return reply.code(201).send(pushResultsBody(await push(context, items)));
  });

  const popHandler = async (
    request: { params: unknown; query: unknown; identity?: { sub?: string | undefined } },
    reply: FastifyReply,
  ) => {
    const options = {
      ...parsePopQuery(
        context,
        request.params as { queue?: unknown; partition?: unknown },
        request.query as Record<string, unknown>,
      ),
      sub: request.identity?.sub,
    };
    return answerPop(reply, options.request.group, (signal, hold) => pop(context, options, signal, hold));
  };
  app.get('/api/v1/pop/queue/:queue', HOT_READ_WRITE, popHandler);
  // Queen's pop by namespace/task: read-write like every pop (docs/broker-api.md route table).
  app.get('/api/v1/pop', HOT_READ_WRITE, async (request, reply) => {
    const { filter, options } = parseFilteredPopQuery(context, request.query as Record<string, unknown>);
    return answerPop(reply, options.request.group, (signal, hold) =>
      popFiltered(context, filter, { ...options, sub: request.identity?.sub }, signal, hold),
    );
  });
  app.get('/api/v1/pop/queue/:queue/partition/:partition', HOT_READ_WRITE, popHandler);

  app.post('/api/v1/ack', HOT_READ_WRITE, async (request) =>
    ackResultsBody(await ack(context, parseAckBody(request.body))),
  );
  app.post('/api/v1/ack/batch', HOT_READ_WRITE, async (request) =>
    ackResultsBody(await ack(context, parseBatchAckBody(request.body))),
  );

  app.post('/api/v1/transaction', READ_WRITE, async (request) => {
    const operations = parseTransactionBody(
      request.body,
      request.identity?.sub,
      context.maxPayloadBytes,
      context.hubConfigured,
    );
    const response = await runTransaction(context, operations);
    return { ...response, results: transactionResultsBody(response.results) };
  });

  app.post<{ Params: { leaseId: string } }>('/api/v1/lease/:leaseId/extend', READ_WRITE, async (request) => [
    leaseExtensionBody(await extendLease(context, request.params.leaseId, parseExtendBody(request.body))),
  ]);
}
