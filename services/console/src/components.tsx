import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export function Card(props: { title?: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card">
      {(props.title || props.actions) && (
        <header class="card-head">
          {props.title && <h2>{props.title}</h2>}
          {props.actions && <div class="actions">{props.actions}</div>}
        </header>
      )}
      {props.children}
    </section>
  );
}

export function Stat(props: { label: string; value: ComponentChildren; hint?: string; testId?: string }) {
  return (
    <div class="stat" data-testid={props.testId} title={props.hint}>
      <div class="stat-value">{props.value}</div>
      <div class="stat-label">{props.label}</div>
    </div>
  );
}

export function Stats(props: { children: ComponentChildren }) {
  return <div class="stats">{props.children}</div>;
}

export function ErrorLine(props: { error: string | undefined }) {
  return props.error ? (
    <p class="error" role="alert">
      {props.error}
    </p>
  ) : null;
}

export function Loading(props: {
  when: unknown;
  error?: string | undefined;
  children: () => ComponentChildren;
}) {
  if (props.when === undefined)
    return props.error ? <ErrorLine error={props.error} /> : <p class="muted">Loading…</p>;
  return (
    <>
      <ErrorLine error={props.error} />
      {props.children()}
    </>
  );
}

export interface Column<Row> {
  readonly title: string;
  readonly render: (row: Row) => ComponentChildren;
  readonly numeric?: boolean;
}

export function Table<Row>(props: {
  rows: readonly Row[];
  columns: readonly Column<Row>[];
  keyOf: (row: Row) => string;
  empty?: string;
  testId?: string;
}) {
  if (props.rows.length === 0) return <p class="muted">{props.empty ?? 'Nothing here.'}</p>;
  return (
    <div class="table-wrap">
      <table data-testid={props.testId}>
        <thead>
          <tr>
            {props.columns.map((column) => (
              <th key={column.title} class={column.numeric ? 'num' : undefined}>
                {column.title}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {props.rows.map((row) => (
            <tr key={props.keyOf(row)}>
              {props.columns.map((column) => (
                <td key={column.title} data-label={column.title} class={column.numeric ? 'num' : undefined}>
                  {column.render(row)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Json(props: { value: unknown }) {
  return <pre class="json">{JSON.stringify(props.value, null, 2)}</pre>;
}

/**
 * A button whose action runs only after the operator confirms in a dialog; the dialog then
 * shows the result (or the error) until closed.
 */
export function ConfirmButton(props: {
  label: string;
  question: ComponentChildren;
  action: () => Promise<string>;
  danger?: boolean;
  disabled?: boolean;
  testId?: string;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ ok: boolean; text: string } | undefined>(undefined);
  const close = () => {
    setOpen(false);
    setResult(undefined);
  };
  const run = async () => {
    setBusy(true);
    try {
      setResult({ ok: true, text: await props.action() });
    } catch (error) {
      setResult({ ok: false, text: error instanceof Error ? error.message : String(error) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        class={props.danger ? 'danger' : undefined}
        disabled={props.disabled}
        data-testid={props.testId}
        onClick={() => setOpen(true)}
      >
        {props.label}
      </button>
      {open && (
        <div class="modal-backdrop">
          <div class="modal" role="dialog" aria-modal="true" aria-label={props.label}>
            <div class="modal-body">{props.question}</div>
            {result && (
              <p class={result.ok ? 'result ok' : 'result error'} data-testid="confirm-result">
                {result.text}
              </p>
            )}
            <div class="modal-actions">
              {result ? (
                <button type="button" onClick={close} data-testid="confirm-close">
                  Close
                </button>
              ) : (
                <>
                  <button type="button" onClick={close} disabled={busy}>
                    Cancel
                  </button>
                  <button
                    type="button"
                    class={props.danger ? 'danger' : 'primary'}
                    onClick={() => void run()}
                    disabled={busy}
                    data-testid="confirm-ok"
                  >
                    {busy ? 'Working…' : 'Confirm'}
                  </button>
                </>
              )}
            </div>
          </div>
        </div>
      )}
    </>
  );
}

/** A time-series chart (uPlot): x in epoch seconds, one line per series. */
export function Chart(props: {
  series: readonly { label: string; color: string }[];
  data: readonly (readonly number[])[];
  height?: number;
  testId?: string;
}) {
  const element = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | undefined>(undefined);
  const labels = props.series.map((s) => s.label).join('|');
  // Rebuilt when the series change; data updates go through setData below.
  useEffect(() => {
    const target = element.current;
    if (!target) return;
    const width = () => Math.max(240, target.clientWidth);
    plot.current = new uPlot(
      {
        width: width(),
        height: props.height ?? 220,
        series: [{}, ...props.series.map((s) => ({ label: s.label, stroke: s.color, width: 2 }))],
        axes: [{}, { size: 50 }],
        // At least the last minute on the x axis: one sample alone would span years.
        scales: {
          x: {
            time: true,
            range: (_plot, min, max) => [Math.min(min, max - 60), max],
          },
          y: { range: (_plot, _min, max) => [0, Math.max(1, max * 1.1)] },
        },
        legend: { live: false },
      },
      props.data as uPlot.AlignedData,
      target,
    );
    const resize = new ResizeObserver(() =>
      plot.current?.setSize({ width: width(), height: props.height ?? 220 }),
    );
    resize.observe(target);
    return () => {
      resize.disconnect();
      plot.current?.destroy();
      plot.current = undefined;
    };
  }, [labels]);
  useEffect(() => {
    plot.current?.setData(props.data as uPlot.AlignedData);
  }, [props.data]);
  return <div class="chart" ref={element} data-testid={props.testId} />;
}

export function formatSeconds(seconds: number): string {
  if (!Number.isFinite(seconds) || seconds < 0) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86400)} d ${Math.floor((seconds % 86400) / 3600)} h`;
}

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleString();
}

export function Age(props: { at: number | undefined; label?: string }) {
  const [, tick] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => tick((n) => n + 1), 1000);
    return () => clearInterval(timer);
  }, []);
  if (props.at === undefined) return null;
  return (
    <span class="muted small">
      {props.label ?? 'updated'} {formatSeconds((Date.now() - props.at) / 1000)} ago
    </span>
  );
}
