import type { Counter } from 'prom-client';

/**
 * Creates a labelled counter's series for each known value of one label, at 0 (issue #13). A
 * series that does not exist until the first event shows as "No data" in Grafana and makes
 * `rate()`/`increase()` miss that first event; a series at 0 from the start is a flat line.
 * Returns the counter, so it can wrap the constructor.
 */
export function withZeroSeries<L extends string>(
  counter: Counter<L>,
  label: L,
  values: readonly string[],
): Counter<L> {
  for (const value of values) counter.inc({ [label]: value } as Partial<Record<L, string>>, 0);
  return counter;
}
