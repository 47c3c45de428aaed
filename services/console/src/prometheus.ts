/** Sums of Prometheus counters by metric name and by one label (the text format, version 0.0.4). */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = LINE.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? '').matchAll(LABEL)) {
      labels[label[1] as string] = (label[2] as string).replace(/\\(.)/g, '$1');
    }
    samples.push({ name: match[1] as string, labels, value: Number(match[3]) });
  }
  return samples;
}

export function sum(samples: readonly Sample[], name: string): number {
  return samples.filter((s) => s.name === name).reduce((total, s) => total + s.value, 0);
}

export function sumBy(samples: readonly Sample[], name: string, label: string): Map<string, number> {
  const totals = new Map<string, number>();
  for (const sample of samples) {
    if (sample.name !== name) continue;
    const key = sample.labels[label] ?? '';
    totals.set(key, (totals.get(key) ?? 0) + sample.value);
  }
  return totals;
}
