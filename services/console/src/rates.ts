/*
 * Push, pop and ack rates over time, from this node's Prometheus counters (`/metrics`) sampled
 * while the console is open: the broker keeps no history (`/status/analytics` is empty), so the
 * console draws what it saw since it was opened. One sampler for every view.
 */
import { useEffect, useState } from 'preact/hooks';
import { metricsText } from './api.js';
import { parsePrometheus, type Sample, sum, sumBy } from './prometheus.js';

export const SAMPLE_MS = 2000;
const KEEP = 300;

export interface RatePoint {
  /** Seconds since the epoch (uPlot's x). */
  readonly t: number;
  readonly push: number;
  readonly pop: number;
  readonly ack: number;
}

export interface RateState {
  readonly points: readonly RatePoint[];
  /** Per queue, messages per second over the last sample. */
  readonly byQueue: ReadonlyMap<string, { push: number; pop: number; ack: number }>;
  readonly samples: readonly Sample[];
  readonly error?: string;
}

let state: RateState = { points: [], byQueue: new Map(), samples: [] };
let previous: { at: number; samples: Sample[] } | undefined;
const listeners = new Set<(next: RateState) => void>();
let timer: ReturnType<typeof setInterval> | undefined;

function perSecond(now: number, before: number, seconds: number): number {
  // A counter that went down means the node restarted: count from zero.
  const delta = now >= before ? now - before : now;
  return Math.round((delta / seconds) * 100) / 100;
}

async function sample(): Promise<void> {
  try {
    const samples = parsePrometheus(await metricsText());
    const at = Date.now();
    let points = state.points;
    let byQueue = state.byQueue;
    if (previous) {
      const seconds = Math.max(0.001, (at - previous.at) / 1000);
      const old = previous.samples;
      const names = [
        'herald_broker_push_total',
        'herald_broker_pop_total',
        'herald_broker_ack_total',
      ] as const;
      const [push, pop, ack] = names.map((name) =>
        perSecond(sum(samples, name), sum(old, name), seconds),
      ) as [number, number, number];
      points = [...points, { t: at / 1000, push, pop, ack }].slice(-KEEP);
      const queues = new Map<string, { push: number; pop: number; ack: number }>();
      const [nowPush, nowPop, nowAck] = names.map((name) => sumBy(samples, name, 'queue'));
      const [oldPush, oldPop, oldAck] = names.map((name) => sumBy(old, name, 'queue'));
      for (const queue of nowPush?.keys() ?? []) {
        queues.set(queue, {
          push: perSecond(nowPush?.get(queue) ?? 0, oldPush?.get(queue) ?? 0, seconds),
          pop: perSecond(nowPop?.get(queue) ?? 0, oldPop?.get(queue) ?? 0, seconds),
          ack: perSecond(nowAck?.get(queue) ?? 0, oldAck?.get(queue) ?? 0, seconds),
        });
      }
      byQueue = queues;
    }
    previous = { at, samples };
    state = { points, byQueue, samples };
  } catch (error) {
    state = { ...state, error: error instanceof Error ? error.message : String(error) };
  }
  for (const listener of listeners) listener(state);
}

export function useRates(): RateState {
  const [current, setCurrent] = useState(state);
  useEffect(() => {
    listeners.add(setCurrent);
    if (!timer) {
      void sample();
      timer = setInterval(() => void sample(), SAMPLE_MS);
    }
    return () => {
      listeners.delete(setCurrent);
    };
  }, []);
  return current;
}
