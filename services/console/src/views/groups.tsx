import { useState } from 'preact/hooks';
import { api, type Capabilities, post } from '../api.js';
import { Age, Card, ConfirmButton, formatSeconds, formatTime, Loading, Table } from '../components.js';
import { href, type Route, usePoll } from '../hooks.js';
import type { ConsumerGroup, LaggingPartition } from '../types.js';

interface SeekAnswer {
  partitionsUpdated: number;
  targetTimestamp?: string | null;
}

function SeekControls(props: { group: ConsumerGroup; onDone: () => void }) {
  const [time, setTime] = useState('');
  const path = `/api/v1/consumer-groups/${encodeURIComponent(props.group.name)}/queues/${encodeURIComponent(props.group.queueName)}/seek`;
  const target = time ? new Date(time) : undefined;
  const who = (
    <>
      group <b>{props.group.name}</b> on <b>{props.group.queueName}</b>
    </>
  );
  return (
    <div class="seek">
      <ConfirmButton
        label="Seek to end"
        testId={`seek-end-${props.group.name}-${props.group.queueName}`}
        danger
        question={
          <p>
            Move {who} to the end: it skips its {props.group.totalLag} pending messages.
          </p>
        }
        action={async () => {
          const answer = await post<SeekAnswer>(path, { toEnd: true });
          props.onDone();
          return `Moved to the end: ${answer.partitionsUpdated} partition(s) updated.`;
        }}
      />
      <input
        type="datetime-local"
        step={1}
        aria-label="Seek time"
        value={time}
        onInput={(event) => setTime((event.target as HTMLInputElement).value)}
      />
      <ConfirmButton
        label="Seek to time"
        testId={`seek-time-${props.group.name}-${props.group.queueName}`}
        disabled={!target || Number.isNaN(target.getTime())}
        question={
          <p>
            Move {who} to {target?.toLocaleString()}: messages from then on are delivered again, older ones
            are skipped.
          </p>
        }
        action={async () => {
          const answer = await post<SeekAnswer>(path, { timestamp: target?.toISOString() });
          props.onDone();
          return `Moved to ${formatTime(answer.targetTimestamp ?? target?.toISOString())}: ${answer.partitionsUpdated} partition(s) updated.`;
        }}
      />
    </div>
  );
}

export function GroupsView(props: { caps: Capabilities; route: Route }) {
  const queue = props.route.query.get('queue') ?? '';
  const [minLag, setMinLag] = useState(60);
  const groups = usePoll(() => api<ConsumerGroup[]>('/api/v1/consumer-groups'), 3000);
  const lagging = usePoll(
    () => api<LaggingPartition[]>(`/api/v1/consumer-groups/lagging?minLagSeconds=${minLag}`),
    5000,
    [minLag],
  );
  const rows = (groups.data ?? []).filter((g) => !queue || g.queueName === queue);
  return (
    <>
      <h1>Consumer groups</h1>
      <Card
        title={queue ? `Groups reading ${queue}` : 'Every group'}
        actions={
          <>
            {queue && <a href={href('groups')}>show all</a>}
            <Age at={groups.loadedAt} />
          </>
        }
      >
        <Loading when={groups.data} error={groups.error}>
          {() => (
            <Table
              testId="groups-table"
              rows={rows}
              keyOf={(g) => `${g.name}\u0000${g.queueName}`}
              empty="No consumer group yet."
              columns={[
                { title: 'Group', render: (g) => (g.name === '__QUEUE_MODE__' ? <i>queue mode</i> : g.name) },
                { title: 'Queue', render: (g) => <a href={href('queues', g.queueName)}>{g.queueName}</a> },
                { title: 'Lag', numeric: true, render: (g) => g.totalLag },
                { title: 'Time lag', render: (g) => formatSeconds(g.maxTimeLag) },
                { title: 'Lagging partitions', numeric: true, render: (g) => g.partitionsWithLag },
                { title: 'State', render: (g) => g.state },
                ...(props.caps.write
                  ? [
                      {
                        title: 'Seek',
                        render: (g: ConsumerGroup) => (
                          <SeekControls group={g} onDone={() => void groups.reload()} />
                        ),
                      },
                    ]
                  : []),
              ]}
            />
          )}
        </Loading>
      </Card>
      <Card
        title="Lagging partitions"
        actions={
          <label class="inline">
            older than{' '}
            <input
              type="number"
              min={0}
              value={minLag}
              onInput={(event) => setMinLag(Number((event.target as HTMLInputElement).value) || 0)}
            />{' '}
            s
          </label>
        }
      >
        <Loading when={lagging.data} error={lagging.error}>
          {() => (
            <Table
              testId="lagging-table"
              rows={lagging.data ?? []}
              keyOf={(l) => `${l.consumer_group}/${l.queue_name}/${l.partition_name}`}
              empty="No partition lags that much."
              columns={[
                { title: 'Group', render: (l) => l.consumer_group },
                { title: 'Queue', render: (l) => <a href={href('queues', l.queue_name)}>{l.queue_name}</a> },
                { title: 'Partition', render: (l) => l.partition_name },
                { title: 'Lag', numeric: true, render: (l) => l.offset_lag },
                { title: 'Time lag', render: (l) => formatSeconds(l.time_lag_seconds) },
              ]}
            />
          )}
        </Loading>
      </Card>
    </>
  );
}
