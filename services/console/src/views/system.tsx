import { api, type Capabilities, post } from '../api.js';
import {
  Age,
  Card,
  ConfirmButton,
  ErrorLine,
  formatSeconds,
  Loading,
  Stat,
  Stats,
  Table,
} from '../components.js';
import { usePoll } from '../hooks.js';
import { sumBy } from '../prometheus.js';
import { useRates } from '../rates.js';
import type { Flags, NodeInfo, OutboxStatus, TenantLimits } from '../types.js';
import { limitSetting, TenantUsageTable } from './limits.js';
import { OutboxCard } from './outbox.js';

const KIND_NAMES = { push: 'push rate (messages/s)', inflight: 'in flight (leased, unacked)' };

/** The broker's tenants seen in the last 10 minutes with a limit: who is near it. */
function TenantLimitsCard(props: { limits: TenantLimits }) {
  const { limits } = props;
  return (
    <Card title="Tenants and their limits (cluster-wide)">
      <p class="muted small" data-testid="limits-defaults">
        Tenant: token <b>{limits.tenant === 'sub' ? 'sub' : 'queue namespace'}</b>. Defaults: push rate{' '}
        {limitSetting(limits.defaults.push)}, in flight {limitSetting(limits.defaults.inflight)};{' '}
        {limits.overrides.length} override{limits.overrides.length === 1 ? '' : 's'}.
      </p>
      <TenantUsageTable usage={limits.usage} kindNames={KIND_NAMES} testId="limits-table" />
    </Card>
  );
}

interface Health {
  status: string;
  backend: string;
}

interface Readiness {
  status?: string;
  reasons?: string[];
}

async function readiness(): Promise<Readiness & { ok: boolean }> {
  const response = await fetch('/readyz');
  const body = (await response.json().catch(() => ({}))) as Readiness;
  return { ...body, ok: response.ok };
}

function MaintenanceToggles(props: { flags: Flags; onChange: () => void }) {
  const toggle = (kind: 'push' | 'pop', enabled: boolean) => (
    <ConfirmButton
      label={`${enabled ? 'Enable' : 'Disable'} ${kind} maintenance`}
      testId={`toggle-${kind}-maintenance`}
      danger={enabled}
      question={
        <p>
          {enabled
            ? kind === 'push'
              ? 'Every node will refuse pushes (503) until this is turned off.'
              : 'Every node will stop handing out messages (pops answer nothing) until this is turned off.'
            : `Every node will accept ${kind}s again.`}
        </p>
      }
      action={async () => {
        const answer = await post<{ maintenanceMode?: boolean; popMaintenanceMode?: boolean }>(
          kind === 'push' ? '/api/v1/system/maintenance' : '/api/v1/system/maintenance/pop',
          { enabled },
        );
        props.onChange();
        const now = kind === 'push' ? answer.maintenanceMode : answer.popMaintenanceMode;
        return `${kind} maintenance is now ${now ? 'on' : 'off'}.`;
      }}
    />
  );
  return (
    <div class="toggles">
      <div class="toggle-row">
        <span>
          Push maintenance: <b data-testid="push-maintenance">{props.flags.maintenanceMode ? 'on' : 'off'}</b>
        </span>
        {toggle('push', !props.flags.maintenanceMode)}
      </div>
      <div class="toggle-row">
        <span>
          Pop maintenance:{' '}
          <b data-testid="pop-maintenance">{props.flags.popMaintenanceMode ? 'on' : 'off'}</b>
        </span>
        {toggle('pop', !props.flags.popMaintenanceMode)}
      </div>
    </div>
  );
}

export function SystemView(props: { caps: Capabilities }) {
  const health = usePoll(
    async () => ({ health: await api<Health>('/health'), ready: await readiness() }),
    5000,
  );
  const admin = usePoll(
    async () =>
      props.caps.admin
        ? {
            flags: await api<Flags>('/api/v1/system/maintenance'),
            nodes: await api<{ backend: string; nodes: NodeInfo[] }>('/api/v1/system/nodes'),
            limits: await api<TenantLimits>('/api/v1/system/limits'),
          }
        : undefined,
    3000,
    [props.caps.admin],
  );
  const outbox = usePoll(
    async () => (props.caps.read ? await api<OutboxStatus>('/api/v1/outbox') : undefined),
    3000,
    [props.caps.read],
  );
  const rates = useRates();
  const redisCommands = [...sumBy(rates.samples, 'herald_redis_command_duration_seconds_count', 'command')]
    .map(([command, count]) => ({
      command,
      count,
      seconds: sumBy(rates.samples, 'herald_redis_command_duration_seconds_sum', 'command').get(command) ?? 0,
    }))
    .sort((a, b) => b.count - a.count);
  return (
    <>
      <h1>System</h1>
      <Loading when={health.data} error={health.error}>
        {() => (
          <Card title="This node" actions={<Age at={health.loadedAt} />}>
            <Stats>
              <Stat label="health" value={health.data?.health.status} />
              <Stat label="backend" value={health.data?.health.backend} testId="backend" />
              <Stat label="ready" value={health.data?.ready.ok ? 'yes' : 'no'} />
            </Stats>
            {!health.data?.ready.ok && <ErrorLine error={(health.data?.ready.reasons ?? []).join('; ')} />}
          </Card>
        )}
      </Loading>
      {props.caps.admin ? (
        <Loading when={admin.data} error={admin.error}>
          {() => (
            <>
              <Card title="Maintenance (cluster-wide)">
                <MaintenanceToggles flags={admin.data?.flags as Flags} onChange={() => void admin.reload()} />
              </Card>
              <Card title="Nodes">
                <Table
                  testId="nodes-table"
                  rows={admin.data?.nodes.nodes ?? []}
                  keyOf={(n) => n.name}
                  columns={[
                    { title: 'Node', render: (n) => (n.self ? <b>{n.name} (this one)</b> : n.name) },
                    { title: 'Address (as Redis sees it)', render: (n) => n.address ?? '—' },
                    {
                      title: 'Connected for',
                      render: (n) => formatSeconds(n.connectedSeconds ?? Number.NaN),
                    },
                  ]}
                />
                <p class="muted small">Nodes whose maintenance worker holds a Redis connection now.</p>
              </Card>
              <TenantLimitsCard limits={admin.data?.limits as TenantLimits} />
            </>
          )}
        </Loading>
      ) : (
        <Card title="Maintenance and nodes">
          <p class="muted">An admin token is needed for the maintenance toggles and the node list.</p>
        </Card>
      )}
      {props.caps.read && <OutboxCard status={outbox.data} error={outbox.error} loadedAt={outbox.loadedAt} />}
      <Card title="Redis commands (this node)">
        <Table
          testId="redis-table"
          rows={redisCommands}
          keyOf={(r) => r.command}
          empty="No Redis command counted (in-process backend, or none yet)."
          columns={[
            { title: 'Command', render: (r) => r.command },
            { title: 'Calls', numeric: true, render: (r) => r.count },
            {
              title: 'Mean latency',
              numeric: true,
              render: (r) => (r.count > 0 ? `${((r.seconds / r.count) * 1000).toFixed(2)} ms` : '—'),
            },
          ]}
        />
      </Card>
    </>
  );
}
