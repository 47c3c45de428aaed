import { useState } from 'preact/hooks';
import { api, type Capabilities, post } from '../api.js';
import { Age, Card, ConfirmButton, formatTime, Json, Loading, Table } from '../components.js';
import { href, type Route, usePoll, withQuery } from '../hooks.js';
import type { DeadLetter, QueueSummary } from '../types.js';

interface Page {
  messages: DeadLetter[];
  total: number;
}

export function DeadLettersView(props: { caps: Capabilities; route: Route }) {
  const queue = props.route.query.get('queue') ?? '';
  const group = props.route.query.get('group') ?? '';
  const [text, setText] = useState('');
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const [inspected, setInspected] = useState<DeadLetter | undefined>(undefined);
  const queues = usePoll(() => api<{ queues: QueueSummary[] }>('/api/v1/resources/queues'), 10000);
  const page = usePoll(
    () => {
      const query = new URLSearchParams({ limit: '200' });
      if (queue) query.set('queue', queue);
      if (group) query.set('consumerGroup', group);
      return api<Page>(`/api/v1/dlq?${query}`);
    },
    3000,
    [queue, group],
  );
  const needle = text.toLowerCase();
  const rows = (page.data?.messages ?? []).filter(
    (m) =>
      !needle ||
      m.transactionId.toLowerCase().includes(needle) ||
      (m.errorMessage ?? '').toLowerCase().includes(needle) ||
      m.partition.toLowerCase().includes(needle),
  );
  const key = (m: DeadLetter) => `${m.queue}\u0000${m.dlqId}`;
  const chosen = rows.filter((m) => selected.has(key(m)));
  const toggle = (m: DeadLetter) => {
    const next = new Set(selected);
    if (next.has(key(m))) next.delete(key(m));
    else next.add(key(m));
    setSelected(next);
  };
  const filterLink = (next: { queue?: string; group?: string }) =>
    withQuery(href('dlq'), { queue: next.queue ?? queue, group: next.group ?? group });

  const requeueSelected = async () => {
    const byQueue = new Map<string, string[]>();
    for (const m of chosen) byQueue.set(m.queue, [...(byQueue.get(m.queue) ?? []), m.dlqId]);
    let requeued = 0;
    for (const [name, dlqIds] of byQueue) {
      requeued += (await post<{ requeued: number }>('/api/v1/dlq/requeue', { queue: name, dlqIds })).requeued;
    }
    setSelected(new Set());
    void page.reload();
    return `Requeued ${requeued} of ${chosen.length} selected message(s).`;
  };

  return (
    <>
      <h1>Dead letters</h1>
      <Card
        actions={
          <>
            <select
              aria-label="Queue"
              value={queue}
              onChange={(event) => {
                location.hash = filterLink({ queue: (event.target as HTMLSelectElement).value }).slice(1);
              }}
            >
              <option value="">every queue</option>
              {(queues.data?.queues ?? []).map((q) => (
                <option key={q.name} value={q.name}>
                  {q.name}
                </option>
              ))}
            </select>
            <input
              type="search"
              placeholder="Filter: transaction, error, partition"
              value={text}
              onInput={(event) => setText((event.target as HTMLInputElement).value)}
            />
            <Age at={page.loadedAt} />
          </>
        }
      >
        <Loading when={page.data} error={page.error}>
          {() => (
            <>
              <p class="muted small" data-testid="dlq-total">
                {page.data?.total} dead letter(s){queue ? ` in ${queue}` : ''}
                {group ? ` for group ${group}` : ''}; {rows.length} shown.
              </p>
              {props.caps.write && (
                <div class="toolbar">
                  <ConfirmButton
                    label={`Requeue selected (${chosen.length})`}
                    testId="requeue-selected"
                    disabled={chosen.length === 0}
                    question={<p>Requeue {chosen.length} selected dead letter(s) to their queues?</p>}
                    action={requeueSelected}
                  />
                  <ConfirmButton
                    label="Requeue all"
                    testId="requeue-all"
                    danger
                    disabled={!queue || (page.data?.total ?? 0) === 0}
                    question={
                      <p>
                        Requeue every dead letter of <b>{queue}</b> ({page.data?.total})?
                      </p>
                    }
                    action={async () => {
                      const answer = await post<{ requeued: number }>('/api/v1/dlq/requeue', {
                        queue,
                        all: true,
                      });
                      void page.reload();
                      return `Requeued ${answer.requeued} message(s) of ${queue}.`;
                    }}
                  />
                  {!queue && <span class="muted small">Pick a queue to requeue all of it.</span>}
                </div>
              )}
              <Table
                testId="dlq-table"
                rows={rows}
                keyOf={key}
                empty="No dead letter."
                columns={[
                  ...(props.caps.write
                    ? [
                        {
                          title: '',
                          render: (m: DeadLetter) => (
                            <input
                              type="checkbox"
                              aria-label={`select ${m.transactionId}`}
                              checked={selected.has(key(m))}
                              onChange={() => toggle(m)}
                            />
                          ),
                        },
                      ]
                    : []),
                  {
                    title: 'Transaction',
                    render: (m) => (
                      <button type="button" class="link" onClick={() => setInspected(m)}>
                        {m.transactionId}
                      </button>
                    ),
                  },
                  { title: 'Queue', render: (m) => <a href={filterLink({ queue: m.queue })}>{m.queue}</a> },
                  { title: 'Partition', render: (m) => m.partition },
                  {
                    title: 'Group',
                    render: (m) => <a href={filterLink({ group: m.consumerGroup })}>{m.consumerGroup}</a>,
                  },
                  { title: 'Error', render: (m) => m.errorMessage ?? '—' },
                  { title: 'Retries', numeric: true, render: (m) => m.retryCount },
                  { title: 'Failed', render: (m) => formatTime(m.failedAt) },
                ]}
              />
            </>
          )}
        </Loading>
      </Card>
      {inspected && (
        <Card
          title={`Dead letter ${inspected.transactionId}`}
          actions={
            <button type="button" onClick={() => setInspected(undefined)}>
              Close
            </button>
          }
        >
          <div data-testid="dlq-inspect">
            <dl class="facts">
              <dt>Error</dt>
              <dd>{inspected.errorMessage ?? '—'}</dd>
              <dt>Retries</dt>
              <dd>{inspected.retryCount}</dd>
              <dt>Queue / partition</dt>
              <dd>
                {inspected.queue} / {inspected.partition}
              </dd>
              <dt>Created / failed</dt>
              <dd>
                {formatTime(inspected.createdAt)} / {formatTime(inspected.failedAt)}
              </dd>
              <dt>Traces</dt>
              <dd>
                <a
                  href={withQuery(href('traces'), {
                    partitionId: inspected.partitionId,
                    transactionId: inspected.transactionId,
                  })}
                >
                  traces of this message
                </a>
              </dd>
            </dl>
            <h3>Payload</h3>
            <Json value={inspected.data} />
          </div>
        </Card>
      )}
    </>
  );
}
