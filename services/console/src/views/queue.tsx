import { useState } from 'preact/hooks';
import { api, type Capabilities, post } from '../api.js';
import {
  Age,
  Card,
  ConfirmButton,
  ErrorLine,
  formatSeconds,
  formatTime,
  Json,
  Loading,
  Table,
} from '../components.js';
import { href, type Route, usePoll, withQuery } from '../hooks.js';
import type { ConsumerGroup, QueueDetail, QueueMessage } from '../types.js';

type Config = QueueDetail['queue']['config'] & { priority: number };

/** Only the options the detail view reports; configure merges what it is given. */
const OPTION_FIELDS: readonly {
  key: keyof Config;
  option: string;
  label: string;
  kind: 'number' | 'boolean';
}[] = [
  { key: 'leaseTime', option: 'leaseTime', label: 'Lease time (s)', kind: 'number' },
  { key: 'retryLimit', option: 'retryLimit', label: 'Retry limit', kind: 'number' },
  { key: 'retryDelay', option: 'retryDelay', label: 'Retry delay (ms)', kind: 'number' },
  { key: 'ttl', option: 'ttl', label: 'TTL (s)', kind: 'number' },
  { key: 'maxQueueSize', option: 'maxSize', label: 'Max size', kind: 'number' },
  { key: 'priority', option: 'priority', label: 'Priority', kind: 'number' },
  { key: 'deadLetterQueue', option: 'deadLetterQueue', label: 'Dead-letter queue', kind: 'boolean' },
];

function OptionsForm(props: { queue: string; config: Config; canWrite: boolean; onSaved: () => void }) {
  const [draft, setDraft] = useState<Record<string, string | boolean>>({});
  const [saved, setSaved] = useState<unknown>(undefined);
  const changed = Object.fromEntries(
    OPTION_FIELDS.flatMap((field) => {
      const value = draft[field.key];
      if (value === undefined || value === props.config[field.key]) return [];
      return [[field.option, field.kind === 'number' ? Number(value) : value]];
    }),
  );
  return (
    <Card title="Options">
      <form class="options" data-testid="options-form" onSubmit={(event) => event.preventDefault()}>
        {OPTION_FIELDS.map((field) => {
          const current = draft[field.key] ?? props.config[field.key];
          return (
            <label key={field.key} htmlFor={`option-${field.option}`}>
              <span>{field.label}</span>
              {field.kind === 'boolean' ? (
                <input
                  id={`option-${field.option}`}
                  type="checkbox"
                  name={field.option}
                  checked={Boolean(current)}
                  disabled={!props.canWrite}
                  onChange={(event) =>
                    setDraft({ ...draft, [field.key]: (event.target as HTMLInputElement).checked })
                  }
                />
              ) : (
                <input
                  id={`option-${field.option}`}
                  type="number"
                  name={field.option}
                  value={String(current)}
                  readOnly={!props.canWrite}
                  onInput={(event) =>
                    setDraft({ ...draft, [field.key]: (event.target as HTMLInputElement).value })
                  }
                />
              )}
            </label>
          );
        })}
      </form>
      {props.canWrite ? (
        <ConfirmButton
          label="Save options"
          testId="save-options"
          disabled={Object.keys(changed).length === 0}
          question={
            <>
              <p>
                Configure <b>{props.queue}</b> with:
              </p>
              <Json value={changed} />
            </>
          }
          action={async () => {
            const answer = await post<{ options: unknown }>('/api/v1/configure', {
              queue: props.queue,
              options: changed,
            });
            setSaved(answer.options);
            setDraft({});
            props.onSaved();
            return 'Configured.';
          }}
        />
      ) : (
        <p class="muted small">Read-only: this token may not configure queues.</p>
      )}
      {saved !== undefined && (
        <details>
          <summary>Every option after the last save</summary>
          <Json value={saved} />
        </details>
      )}
    </Card>
  );
}

function MessageBrowser(props: { queue: string; route: Route }) {
  const offset = Number(props.route.query.get('offset') ?? 0);
  const [opened, setOpened] = useState<{ key: string; body?: unknown; error?: string } | undefined>(
    undefined,
  );
  const messages = usePoll(
    () =>
      api<QueueMessage[]>(
        `/api/v1/status/queues/${encodeURIComponent(props.queue)}/messages?limit=50&offset=${offset}`,
      ),
    5000,
    [props.queue, offset],
  );
  const open = async (message: QueueMessage) => {
    const key = `${message.partitionId}/${message.transactionId}`;
    try {
      const body = await api(
        `/api/v1/messages/${encodeURIComponent(message.partitionId)}/${encodeURIComponent(message.transactionId)}`,
      );
      setOpened({ key, body });
    } catch (error) {
      setOpened({ key, error: error instanceof Error ? error.message : String(error) });
    }
  };
  const page = (to: number) =>
    withQuery(href('queues', props.queue), { offset: to > 0 ? String(to) : undefined });
  return (
    <Card
      title="Messages"
      actions={
        <span class="pager">
          {offset > 0 && <a href={page(Math.max(0, offset - 50))}>← newer</a>}
          {(messages.data?.length ?? 0) === 50 && <a href={page(offset + 50)}>older →</a>}
        </span>
      }
    >
      <Loading when={messages.data} error={messages.error}>
        {() => (
          <Table
            testId="messages-table"
            rows={messages.data ?? []}
            keyOf={(m) => m.id}
            empty="No retained message."
            columns={[
              {
                title: 'Transaction',
                render: (m) => (
                  <button type="button" class="link" onClick={() => void open(m)}>
                    {m.transactionId}
                  </button>
                ),
              },
              { title: 'Partition', render: (m) => m.partition },
              { title: 'Status', render: (m) => <span class={`badge ${m.status}`}>{m.status}</span> },
              { title: 'Created', render: (m) => formatTime(m.createdAt) },
              {
                title: 'Traces',
                render: (m) => (
                  <a
                    href={withQuery(href('traces'), {
                      partitionId: m.partitionId,
                      transactionId: m.transactionId,
                    })}
                  >
                    traces
                  </a>
                ),
              },
            ]}
          />
        )}
      </Loading>
      {opened && (
        <div class="inspect" data-testid="message-inspect">
          <h3>{opened.key}</h3>
          <ErrorLine error={opened.error} />
          {opened.body !== undefined && <Json value={opened.body} />}
        </div>
      )}
    </Card>
  );
}

export function QueueView(props: { name: string; caps: Capabilities; route: Route }) {
  const path = `/api/v1/status/queues/${encodeURIComponent(props.name)}`;
  const detail = usePoll(() => api<QueueDetail>(path), 3000, [props.name]);
  const groups = usePoll(
    async () =>
      (await api<ConsumerGroup[]>('/api/v1/consumer-groups')).filter((g) => g.queueName === props.name),
    3000,
    [props.name],
  );
  return (
    <>
      <h1>
        <a href={href('queues')}>Queues</a> / <span data-testid="queue-name">{props.name}</span>
      </h1>
      <Loading when={detail.data} error={detail.error}>
        {() => {
          const d = detail.data as QueueDetail;
          return (
            <>
              <Card title="Partitions" actions={<Age at={detail.loadedAt} />}>
                <Table
                  testId="partitions-table"
                  rows={d.partitions}
                  keyOf={(p) => p.id}
                  empty="No partition yet."
                  columns={[
                    { title: 'Partition', render: (p) => p.name },
                    { title: 'Retained', numeric: true, render: (p) => p.messages.total },
                    { title: 'Pending', numeric: true, render: (p) => p.messages.pending },
                    { title: 'Processing', numeric: true, render: (p) => p.messages.processing },
                    { title: 'Completed', numeric: true, render: (p) => p.messages.completed },
                    { title: 'Dead letters', numeric: true, render: (p) => p.messages.deadLetter },
                    { title: 'Oldest pending', render: (p) => formatTime(p.oldestMessage) },
                  ]}
                />
                <p class="muted small">
                  Counted live from the queue's partitions. Totals: {d.totals.total} retained,{' '}
                  {d.totals.pending} pending, {d.totals.deadLetter} dead letters.
                </p>
              </Card>
              <Card title="Consumer groups">
                <Loading when={groups.data} error={groups.error}>
                  {() => (
                    <Table
                      testId="queue-groups-table"
                      rows={groups.data ?? []}
                      keyOf={(g) => g.name}
                      empty="No consumer group has read this queue."
                      columns={[
                        {
                          title: 'Group',
                          render: (g) => (
                            <a href={withQuery(href('groups'), { queue: g.queueName })}>{g.name}</a>
                          ),
                        },
                        { title: 'Lag (messages)', numeric: true, render: (g) => g.totalLag },
                        { title: 'Time lag', render: (g) => formatSeconds(g.maxTimeLag) },
                        { title: 'Partitions lagging', numeric: true, render: (g) => g.partitionsWithLag },
                        { title: 'State', render: (g) => g.state },
                      ]}
                    />
                  )}
                </Loading>
              </Card>
              <OptionsForm
                queue={props.name}
                config={{ ...d.queue.config, priority: d.queue.priority }}
                canWrite={props.caps.write}
                onSaved={() => void detail.reload()}
              />
            </>
          );
        }}
      </Loading>
      <MessageBrowser queue={props.name} route={props.route} />
    </>
  );
}
