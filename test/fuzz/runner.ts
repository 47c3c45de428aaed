import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { ServiceNode } from '../security/nodes.js';
import { type RawRequest, type RawResponse, rawRequest } from '../security/raw-http.js';

/** Fixed by default so a run is reproducible; FUZZ_SEED replays another. */
export const SEED = process.env.FUZZ_SEED === undefined ? 20_261_201 : Number(process.env.FUZZ_SEED);
/** Random requests per target (the boundary set comes on top). */
export const RANDOM_REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 1500);
/** Wall-clock budget per target; the run stops early (and says so) when it is spent. */
export const TIME_BUDGET_MS = Number(process.env.FUZZ_TIME_BUDGET_MS ?? 20_000);
/** Growth of the node's resident memory over the run that counts as unbounded. */
export const MEMORY_BOUND_BYTES = 200 * 1024 * 1024;
/**
 * How long a request may go unanswered. A parked long-poll (pop with wait) may legitimately hold
 * it; anything else unanswered this long is a hang.
 */
export const ANSWER_TIMEOUT_MS = 10_000;
/** /healthz must answer within this while the fuzzer runs (a liveness bound, not a benchmark). */
export const HEALTH_TIMEOUT_MS = 5000;
/** Heap cap of the fuzzed node, so a memory bomb ends in a crash we report, not a swapping host. */
export const NODE_HEAP_MB = 1024;

export interface Failure {
  readonly index: number;
  readonly kind: '5xx' | 'crash' | 'hang' | 'client';
  readonly detail: string;
  readonly request: RawRequest;
}

export interface FuzzReport {
  readonly sent: number;
  readonly planned: number;
  readonly elapsedMs: number;
  readonly stoppedByTime: boolean;
  readonly statusCounts: Record<string, number>;
  readonly failures: Failure[];
  readonly rssBeforeBytes: number | undefined;
  readonly rssAfterBytes: number | undefined;
  readonly rssPeakBytes: number | undefined;
  readonly healthProbes: number;
  readonly healthFailures: string[];
  readonly healthWorstMs: number;
}

/** The requests of one run: boundary cases first, then seeded random ones. */
export function plan(boundary: readonly RawRequest[], random: fc.Arbitrary<RawRequest>): RawRequest[] {
  const sampled = fc.sample(random, { seed: SEED, numRuns: RANDOM_REQUESTS });
  const all = [...boundary, ...sampled];
  const only = process.env.FUZZ_ONLY;
  if (only === undefined) return all;
  return only.split(',').map((index) => all[Number(index)] as RawRequest);
}

function shorten(text: string, limit = 120): string {
  if (text.length <= limit) return text;
  const run = /^(.)\1*$/s.test(text)
    ? `${JSON.stringify(text[0])}×${text.length}`
    : `${text.slice(0, limit)}…`;
  return `${run} (${text.length} chars)`;
}

/** A request as text a reader can replay (`FUZZ_SEED=… FUZZ_ONLY=<index>` replays it exactly). */
export function describeRequest(request: RawRequest): string {
  const headers = Object.fromEntries(
    Object.entries(request.headers ?? {}).map(([name, value]) => [name, shorten(value, 60)]),
  );
  const body = request.body === undefined ? undefined : shorten(String(request.body), 300);
  return JSON.stringify({ method: request.method, target: shorten(request.target, 300), headers, body });
}

function mib(bytes: number | undefined): string {
  return bytes === undefined ? 'n/a' : `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

export function summarize(name: string, report: FuzzReport): string {
  const statuses = Object.entries(report.statusCounts)
    .sort()
    .map(([status, count]) => `${status}×${count}`)
    .join(' ');
  const lines = [
    `fuzz ${name}: seed ${SEED}, ${report.sent}/${report.planned} requests sent in ${report.elapsedMs} ms${report.stoppedByTime ? ' (time budget spent)' : ''}`,
    `  statuses: ${statuses}`,
    `  rss: before ${mib(report.rssBeforeBytes)}, after ${mib(report.rssAfterBytes)}, peak ${mib(report.rssPeakBytes)} (bound: +${mib(MEMORY_BOUND_BYTES)})`,
    `  /healthz: ${report.healthProbes} probes, worst ${report.healthWorstMs} ms, ${report.healthFailures.length} failed`,
    `  failures: ${report.failures.length}`,
  ];
  const seen = new Set<string>();
  for (const failure of report.failures) {
    const path = failure.request.target.split('?')[0]?.slice(0, 80);
    const key = `${failure.kind} ${failure.request.method} ${path} ${failure.detail.slice(0, 60)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    lines.push(
      `  - #${failure.index} ${failure.kind}: ${failure.detail.slice(0, 300)}\n    replay: ${describeRequest(failure.request)}`,
    );
  }
  const listed = report.failures.slice(0, 40);
  if (listed.length > 0)
    lines.push(
      `  every failure (first ${listed.length}; replay one with FUZZ_SEED=${SEED} FUZZ_ONLY=<index>):`,
    );
  for (const failure of listed) {
    const body = failure.request.body === undefined ? '' : ` ${shorten(String(failure.request.body), 100)}`;
    lines.push(
      `    #${failure.index} ${failure.detail.slice(0, 40)} ← ${failure.request.method} ${shorten(failure.request.target, 80)}${body}`,
    );
  }
  return lines.join('\n');
}

/** Pop routes may park the request until their timeout: not answering is allowed there. */
function mayPark(request: RawRequest): boolean {
  return request.method === 'GET' && /\/pop\b/.test(request.target);
}

/**
 * Sends the planned requests one by one to a real node and checks, per request: no 5xx, the
 * process still runs, an answer arrives; over the run: /healthz keeps answering (probed in
 * parallel every 250 ms) and resident memory does not grow past MEMORY_BOUND_BYTES.
 */
export async function fuzz(
  node: ServiceNode,
  requests: readonly RawRequest[],
  /** A 5xx the service's spec prescribes (the hub's 501 for an unsupported matchType parameter). */
  prescribed: (status: number, body: string) => boolean = () => false,
): Promise<FuzzReport> {
  const started = Date.now();
  const statusCounts: Record<string, number> = {};
  const failures: Failure[] = [];
  const healthFailures: string[] = [];
  let healthProbes = 0;
  let healthWorstMs = 0;
  let rssPeakBytes = node.rssBytes();
  const rssBeforeBytes = rssPeakBytes;
  let probing = true;
  const prober = (async () => {
    while (probing) {
      const probeStart = Date.now();
      try {
        const answer = await rawRequest(node.port, { method: 'GET', target: '/healthz' }, HEALTH_TIMEOUT_MS);
        if (answer.status !== 200) healthFailures.push(`status ${answer.status}`);
      } catch (error) {
        healthFailures.push((error as Error).message);
      }
      healthProbes += 1;
      healthWorstMs = Math.max(healthWorstMs, Date.now() - probeStart);
      const rss = node.rssBytes();
      if (rss !== undefined) rssPeakBytes = Math.max(rssPeakBytes ?? 0, rss);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  })();
  let sent = 0;
  let stoppedByTime = false;
  for (const [index, request] of requests.entries()) {
    if (Date.now() - started > TIME_BUDGET_MS) {
      stoppedByTime = true;
      break;
    }
    if (!node.alive()) {
      failures.push({ index, kind: 'crash', detail: `node exited before request #${index}`, request });
      break;
    }
    sent += 1;
    let response: RawResponse | undefined;
    try {
      response = await rawRequest(node.port, request, ANSWER_TIMEOUT_MS);
    } catch (error) {
      const message = (error as Error).message;
      if (!node.alive()) failures.push({ index, kind: 'crash', detail: `node died: ${message}`, request });
      else if (/no complete answer/.test(message)) {
        if (!mayPark(request)) failures.push({ index, kind: 'hang', detail: message, request });
        statusCounts.parked = (statusCounts.parked ?? 0) + 1;
      } else failures.push({ index, kind: 'client', detail: message, request });
      continue;
    }
    statusCounts[response.status] = (statusCounts[response.status] ?? 0) + 1;
    if (response.status >= 500) {
      // A HEAD answer has no body to judge: the same request as GET shows what it was.
      const body =
        request.method === 'HEAD'
          ? await rawRequest(node.port, { ...request, method: 'GET' }, ANSWER_TIMEOUT_MS).then(
              (answer) => (answer.status === response.status ? answer.body : ''),
              () => '',
            )
          : response.body;
      if (!prescribed(response.status, body)) {
        failures.push({ index, kind: '5xx', detail: `${response.status} ${body.slice(0, 200)}`, request });
      }
    }
  }
  probing = false;
  await prober;
  const rssAfterBytes = node.rssBytes();
  return {
    sent,
    planned: requests.length,
    elapsedMs: Date.now() - started,
    stoppedByTime,
    statusCounts,
    failures,
    rssBeforeBytes,
    rssAfterBytes,
    rssPeakBytes,
    healthProbes,
    healthFailures,
    healthWorstMs,
  };
}

/** The suite's properties: requests went out, no 5xx/crash/hang, /healthz answered, memory bounded. */
export function assertFuzzPassed(report: FuzzReport, node: ServiceNode, label: string): void {
  assert.ok(report.sent > 0, 'requests were sent');
  assert.deepEqual(
    report.failures.map((failure) => `#${failure.index} ${failure.kind}: ${failure.detail.slice(0, 120)}`),
    [],
    'failures (replays printed above)',
  );
  assert.deepEqual(report.healthFailures, []);
  assert.ok(node.alive(), `${label} still runs`);
  assert.ok(
    report.rssBeforeBytes !== undefined && report.rssPeakBytes !== undefined,
    `${label}'s resident memory could not be read`,
  );
  const growth = report.rssPeakBytes - report.rssBeforeBytes;
  assert.ok(
    growth < MEMORY_BOUND_BYTES,
    `resident memory grew by ${(growth / 1024 / 1024).toFixed(1)} MiB (bound ${MEMORY_BOUND_BYTES / 1024 / 1024} MiB)`,
  );
}
