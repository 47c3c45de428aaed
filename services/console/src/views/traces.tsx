import { useState } from 'preact/hooks';
import { api } from '../api.js';
import { Card, formatTime, Json, Loading, Table } from '../components.js';
import { href, type Route, usePoll, withQuery } from '../hooks.js';
import type { Trace } from '../types.js';

function TraceTable(props: { traces: readonly Trace[]; testId: string }) {
  return (
    <Table
      testId={props.testId}
      rows={props.traces}
      keyOf={(t) => t.id}
      empty="No trace."
      columns={[
        { title: 'When', render: (t) => formatTime(t.createdAt) },
        { title: 'Event', render: (t) => t.eventType },
        {
          title: 'Message',
          render: (t) => (
            <a
              href={withQuery(href('traces'), { partitionId: t.partitionId, transactionId: t.transactionId })}
            >
              {t.transactionId}
            </a>
          ),
        },
        { title: 'Names', render: (t) => (t.traceNames ?? []).join(', ') },
        { title: 'Data', render: (t) => <Json value={t.data} /> },
      ]}
    />
  );
}

export function TracesView(props: { route: Route }) {
  const traceName = props.route.query.get('name') ?? '';
  const partitionId = props.route.query.get('partitionId') ?? '';
  const transactionId = props.route.query.get('transactionId') ?? '';
  const [draft, setDraft] = useState({ partitionId, transactionId });
  const names = usePoll(
    () => api<{ names: { name: string; count: number }[] }>('/api/v1/traces/names'),
    10000,
  );
  const byName = usePoll(
    async () =>
      traceName
        ? (await api<{ traces: Trace[] }>(`/api/v1/traces/by-name/${encodeURIComponent(traceName)}`)).traces
        : [],
    5000,
    [traceName],
  );
  const byMessage = usePoll(
    async () =>
      partitionId && transactionId
        ? (
            await api<{ traces: Trace[] }>(
              `/api/v1/traces/${encodeURIComponent(partitionId)}/${encodeURIComponent(transactionId)}`,
            )
          ).traces
        : [],
    5000,
    [partitionId, transactionId],
  );
  return (
    <>
      <h1>Traces</h1>
      <Card title="By name">
        <Loading when={names.data} error={names.error}>
          {() => (
            <div class="chips" data-testid="trace-names">
              {(names.data?.names ?? []).length === 0 && (
                <span class="muted">No trace name recorded yet.</span>
              )}
              {(names.data?.names ?? []).map(({ name, count }) => (
                <a
                  key={name}
                  class={name === traceName ? 'chip active' : 'chip'}
                  href={withQuery(href('traces'), { name })}
                  title={`${count} trace(s)`}
                >
                  {name}
                </a>
              ))}
            </div>
          )}
        </Loading>
        {traceName && (
          <Loading when={byName.data} error={byName.error}>
            {() => <TraceTable traces={byName.data ?? []} testId="traces-by-name" />}
          </Loading>
        )}
      </Card>
      <Card title="By message">
        <form
          class="inline-form"
          onSubmit={(event) => {
            event.preventDefault();
            location.hash = withQuery(href('traces'), { ...draft, name: traceName || undefined }).slice(1);
          }}
        >
          <input
            placeholder="partition id"
            aria-label="partition id"
            value={draft.partitionId}
            onInput={(event) => setDraft({ ...draft, partitionId: (event.target as HTMLInputElement).value })}
          />
          <input
            placeholder="transaction id"
            aria-label="transaction id"
            value={draft.transactionId}
            onInput={(event) =>
              setDraft({ ...draft, transactionId: (event.target as HTMLInputElement).value })
            }
          />
          <button type="submit">Show</button>
        </form>
        {partitionId && transactionId && (
          <Loading when={byMessage.data} error={byMessage.error}>
            {() => <TraceTable traces={byMessage.data ?? []} testId="traces-by-message" />}
          </Loading>
        )}
      </Card>
    </>
  );
}
