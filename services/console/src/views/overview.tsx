import { api, type Capabilities } from '../api.js';
import { Age, Card, Chart, formatSeconds, Loading, Stat, Stats } from '../components.js';
import { href, usePoll } from '../hooks.js';
import { useRates } from '../rates.js';
import type { Flags, NodeInfo, Overview } from '../types.js';

const SERIES = [
  { label: 'push/s', color: '#2563eb' },
  { label: 'pop/s', color: '#16a34a' },
  { label: 'ack/s', color: '#d97706' },
];

export function OverviewView(props: { caps: Capabilities }) {
  const overview = usePoll(() => api<Overview>('/api/v1/resources/overview'), 2000);
  const admin = usePoll(
    async () =>
      props.caps.admin
        ? {
            flags: await api<Flags>('/api/v1/system/maintenance'),
            nodes: (await api<{ nodes: NodeInfo[] }>('/api/v1/system/nodes')).nodes,
          }
        : undefined,
    5000,
    [props.caps.admin],
  );
  const rates = useRates();
  const data = [
    rates.points.map((p) => p.t),
    rates.points.map((p) => p.push),
    rates.points.map((p) => p.pop),
    rates.points.map((p) => p.ack),
  ];
  return (
    <>
      <h1>Overview</h1>
      <Loading when={overview.data} error={overview.error}>
        {() => {
          const o = overview.data as Overview;
          return (
            <Card
              title="Cluster"
              actions={
                <span class="muted small">
                  stats snapshot {o.statsAge < 0 ? 'not taken yet' : `${o.statsAge} s old`} ·{' '}
                  <Age at={overview.loadedAt} />
                </span>
              }
            >
              <Stats>
                <Stat label="queues" value={<a href={href('queues')}>{o.queues}</a>} testId="stat-queues" />
                <Stat label="partitions" value={o.partitions} />
                <Stat label="pending" value={o.messages.pending} testId="stat-pending" />
                <Stat label="processing" value={o.messages.processing} />
                <Stat
                  label="dead letters"
                  value={<a href={href('dlq')}>{o.messages.deadLetter}</a>}
                  testId="stat-dlq"
                />
                <Stat
                  label="oldest pending"
                  value={formatSeconds(o.lag.time.max)}
                  hint="age of the oldest message a group has not resolved"
                  testId="stat-oldest"
                />
                <Stat label="ingested/s (cluster)" value={o.throughput.ingestedPerSecond} />
                <Stat label="processed/s (cluster)" value={o.throughput.processedPerSecond} />
                <Stat
                  label="nodes seen"
                  value={admin.data ? admin.data.nodes.length : '—'}
                  hint={props.caps.admin ? 'broker nodes connected to Redis' : 'needs an admin token'}
                  testId="stat-nodes"
                />
                <Stat
                  label="maintenance"
                  value={
                    admin.data
                      ? [
                          admin.data.flags.maintenanceMode && 'push',
                          admin.data.flags.popMaintenanceMode && 'pop',
                        ]
                          .filter(Boolean)
                          .join(' + ') || 'off'
                      : '—'
                  }
                  hint={props.caps.admin ? 'push / pop maintenance flags' : 'needs an admin token'}
                  testId="stat-maintenance"
                />
              </Stats>
            </Card>
          );
        }}
      </Loading>
      <Card
        title="Rates (this node)"
        actions={<span class="muted small">from /metrics every 2 s since the console was opened</span>}
      >
        {rates.error && <p class="error">{rates.error}</p>}
        <Chart series={SERIES} data={data} testId="rates-chart" />
        {rates.points.length > 0 && (
          <p class="muted small" data-testid="rates-now" data-points={rates.points.length}>
            now: {rates.points.at(-1)?.push} push/s · {rates.points.at(-1)?.pop} pop/s ·{' '}
            {rates.points.at(-1)?.ack} ack/s
          </p>
        )}
      </Card>
    </>
  );
}
