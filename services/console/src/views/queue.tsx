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
import type { BridgeEvents, ConsumerGroup, QueueBridge, QueueDetail, QueueMessage } from '../types.js';

type Config = QueueDetail['queue']['config'] & { priority: number };

type FieldKind = 'number' | 'boolean' | 'text' | 'choice';

interface OptionField {
  key: keyof Config;
  option: string;
  label: string;
  kind: FieldKind;
  choices?: readonly string[];
  placeholder?: string;
}

/** Only the options the detail view reports; configure merges what it is given. */
const OPTION_FIELDS: readonly OptionField[] = [
  { key: 'leaseTime', option: 'leaseTime', label: 'Lease time (s)', kind: 'number' },
  { key: 'retryLimit', option: 'retryLimit', label: 'Retry limit', kind: 'number' },
  { key: 'retryDelay', option: 'retryDelay', label: 'Retry delay (ms)', kind: 'number' },
  { key: 'ttl', option: 'ttl', label: 'TTL (s)', kind: 'number' },
  { key: 'maxQueueSize', option: 'maxSize', label: 'Max size', kind: 'number' },
  { key: 'priority', option: 'priority', label: 'Priority', kind: 'number' },
  { key: 'deadLetterQueue', option: 'deadLetterQueue', label: 'Dead-letter queue', kind: 'boolean' },
];

const BRIDGE_EVENTS: readonly BridgeEvents[] = ['push', 'completed', 'both'];

/** The queue -> topic bridge (docs/broker-outbox.md): each message event becomes a hub update. */
const BRIDGE_FIELDS: readonly OptionField[] = [
  {
    key: 'bridgeTopic',
    option: 'bridgeTopic',
    label: 'Bridge topic (empty: off)',
    kind: 'text',
    placeholder: 'https://example.com/{queue}/{partition}',
  },
  { key: 'bridgeOn', option: 'bridgeOn', label: 'Bridge on', kind: 'choice', choices: BRIDGE_EVENTS },
  { key: 'bridgePrivate', option: 'bridgePrivate', label: 'Private updates', kind: 'boolean' },
];

type Draft = Record<string, string | boolean>;

function OptionInput(props: {
  field: OptionField;
  current: number | string | boolean | undefined;
  canWrite: boolean;
  onChange: (value: string | boolean) => void;
}) {
  const { field, current } = props;
  const id = `option-${field.option}`;
  const value = (event: Event) => (event.target as HTMLInputElement | HTMLSelectElement).value;
  switch (field.kind) {
    case 'boolean':
      return (
        <input
          id={id}
          type="checkbox"
          name={field.option}
          checked={Boolean(current)}
          disabled={!props.canWrite}
          onChange={(event) => props.onChange((event.target as HTMLInputElement).checked)}
        />
      );
    case 'choice':
      return (
        <select
          id={id}
          name={field.option}
          value={current === undefined ? '' : String(current)}
          disabled={!props.canWrite}
          onChange={(event) => props.onChange(value(event))}
        >
          {current === undefined && (
            <option value="" disabled>
              not reported
            </option>
          )}
          {(field.choices ?? []).map((choice) => (
            <option key={choice} value={choice}>
              {choice}
            </option>
          ))}
        </select>
      );
    case 'number':
      return (
        <input
          id={id}
          type="number"
          name={field.option}
          value={String(current)}
          readOnly={!props.canWrite}
          onInput={(event) => props.onChange(value(event))}
        />
      );
    case 'text':
      return (
        <input
          id={id}
          type="text"
          name={field.option}
          value={current === undefined ? '' : String(current)}
          placeholder={current === undefined ? 'not reported' : field.placeholder}
          readOnly={!props.canWrite}
          onInput={(event) => props.onChange(value(event))}
        />
      );
  }
}

function OptionsForm(props: {
  queue: string;
  config: Config;
  canWrite: boolean;
  /** Reloads the queue's detail; resolves once its answer is taken (or dropped as older). */
  onSaved: () => Promise<void>;
}) {
  const [draft, setDraft] = useState<Draft>({});
  const [saved, setSaved] = useState<(Partial<QueueBridge> & Record<string, unknown>) | undefined>(undefined);
  // The bridge as the detail reports it; else as the last save here answered it (a broker whose
  // queue view leaves the bridge out still answers every option to configure).
  const known: Config = {
    ...props.config,
    ...Object.fromEntries(
      BRIDGE_FIELDS.flatMap((field) =>
        props.config[field.key] === undefined && saved?.[field.key] !== undefined
          ? [[field.key, saved[field.key]]]
          : [],
      ),
    ),
  };
  const changed = Object.fromEntries(
    [...OPTION_FIELDS, ...BRIDGE_FIELDS].flatMap((field) => {
      const value = draft[field.key];
      if (value === undefined || value === known[field.key]) return [];
      return [[field.option, field.kind === 'number' ? Number(value) : value]];
    }),
  );
  const fields = (list: readonly OptionField[]) =>
    list.map((field) => (
      <label key={field.key} htmlFor={`option-${field.option}`}>
        <span>{field.label}</span>
        <OptionInput
          field={field}
          current={draft[field.key] ?? known[field.key]}
          canWrite={props.canWrite}
          onChange={(value) => setDraft({ ...draft, [field.key]: value })}
        />
      </label>
    ));
  const bridgeReported = BRIDGE_FIELDS.every((field) => known[field.key] !== undefined);
  return (
    <Card title="Options">
      <form class="options" data-testid="options-form" onSubmit={(event) => event.preventDefault()}>
        {fields(OPTION_FIELDS)}
      </form>
      <h3>Bridge to the hub</h3>
      <p class="muted small">
        Each message pushed, completed (by each group) or both becomes an update on the topic template (
        <code>{'{queue} {partition} {namespace} {task} {group}'}</code>), relayed by the nodes with a hub
        (BROKER_HUB_URL; docs/broker-outbox.md).
        {!bridgeReported &&
          ' This broker does not report the current bridge: a save sends what is changed here.'}
      </p>
      <form class="options" data-testid="bridge-form" onSubmit={(event) => event.preventDefault()}>
        {fields(BRIDGE_FIELDS)}
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
            const answer = await post<{ options: Partial<QueueBridge> & Record<string, unknown> }>(
              '/api/v1/configure',
              { queue: props.queue, options: changed },
            );
            setSaved(answer.options);
            // The draft gives way once the detail shows the saved options, not the ones before.
            await props.onSaved();
            setDraft({});
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
                onSaved={detail.reload}
              />
            </>
          );
        }}
      </Loading>
      <MessageBrowser queue={props.name} route={props.route} />
    </>
  );
}
