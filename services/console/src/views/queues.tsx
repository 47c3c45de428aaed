import { useState } from 'preact/hooks';
import { api, type Capabilities } from '../api.js';
import { Age, Card, Loading, Table } from '../components.js';
import { href, usePoll } from '../hooks.js';
import { useRates } from '../rates.js';
import type { QueueSummary } from '../types.js';

export function QueuesView(_props: { caps: Capabilities }) {
  const queues = usePoll(() => api<{ queues: QueueSummary[] }>('/api/v1/resources/queues'), 3000);
  const rates = useRates();
  const [filter, setFilter] = useState('');
  return (
    <>
      <h1>Queues</h1>
      <Card
        actions={
          <>
            <input
              type="search"
              placeholder="Filter by name"
              value={filter}
              onInput={(event) => setFilter((event.target as HTMLInputElement).value)}
            />
            <Age at={queues.loadedAt} />
          </>
        }
      >
        <Loading when={queues.data} error={queues.error}>
          {() => (
            <Table
              testId="queues-table"
              rows={(queues.data?.queues ?? []).filter((q) => q.name.includes(filter))}
              keyOf={(q) => q.name}
              empty="No queue yet: configure one or push a message."
              columns={[
                { title: 'Queue', render: (q) => <a href={href('queues', q.name)}>{q.name}</a> },
                {
                  title: 'Namespace / task',
                  render: (q) => [q.namespace, q.task].filter(Boolean).join(' / ') || '—',
                },
                { title: 'Partitions', numeric: true, render: (q) => q.partitions },
                { title: 'Depth', numeric: true, render: (q) => q.messages.pending },
                { title: 'Processing', numeric: true, render: (q) => q.messages.processing },
                { title: 'Retained', numeric: true, render: (q) => q.messages.total },
                {
                  title: 'push/pop/ack per s',
                  numeric: true,
                  render: (q) => {
                    const r = rates.byQueue.get(q.name);
                    return r ? `${r.push} / ${r.pop} / ${r.ack}` : '—';
                  },
                },
              ]}
            />
          )}
        </Loading>
        <p class="muted small">
          Depth and counts come from the stats snapshot (every few seconds); rates from this node's counters.
        </p>
      </Card>
    </>
  );
}
