/*
 * The Mercure hub, seen from the console: connected subscribers per hub node (each node's
 * /metrics), the active subscriptions (the subscriptions API, MERCURE_SUBSCRIPTIONS=1) and a
 * live tail of a topic selector over SSE. The hub must allow the console's origin
 * (MERCURE_CORS_ORIGINS). The hub token (a subscriber JWT) stays in this tab's sessionStorage;
 * EventSource cannot send headers, so the tail passes it as the `authorization` query parameter.
 */
import { useEffect, useState } from 'preact/hooks';
import { Card, ErrorLine, formatTime, Json, Table } from '../components.js';
import { href, type Route, usePoll, withQuery } from '../hooks.js';
import { parsePrometheus, sum } from '../prometheus.js';
import type { HubTenantLimits } from '../types.js';
import { limitSetting, TenantUsageTable } from './limits.js';

const HUB_TOKEN_KEY = 'herald.console.hubToken';
const HUB_ADMIN_TOKEN_KEY = 'herald.console.hubAdminToken';

const HUB_KIND_NAMES = { subscriptions: 'streams open at once', publish: 'publish rate (updates/s)' };

/**
 * The hub's tenants near their limits (GET /herald/admin/limits): needs a hub admin token, a
 * publisher-key JWT carrying `"herald": {"admin": true}` (`herald token --hub-admin`).
 */
function HubTenants(props: { hubUrl: string; token: string }) {
  const limits = usePoll(
    async () => {
      const response = await fetch(`${new URL(props.hubUrl).origin}/herald/admin/limits`, {
        headers: authorization(props.token),
      });
      if (!response.ok) {
        throw new Error(
          `Limits: HTTP ${response.status}${response.status === 401 || response.status === 403 ? ' (a hub admin token is needed: herald token --hub-admin)' : ''}`,
        );
      }
      return (await response.json()) as HubTenantLimits;
    },
    3000,
    [props.hubUrl, props.token],
  );
  return (
    <Card title="Hub tenants and their limits (cluster-wide)">
      <ErrorLine error={limits.error} />
      {limits.data && (
        <>
          <p class="muted small" data-testid="hub-limits-defaults">
            Defaults: streams per subject {limitSetting(limits.data.defaults.subscriptions)}, publish rate{' '}
            {limitSetting(limits.data.defaults.publish)}; {limits.data.overrides.length} override
            {limits.data.overrides.length === 1 ? '' : 's'}.
          </p>
          <TenantUsageTable usage={limits.data.usage} kindNames={HUB_KIND_NAMES} testId="hub-limits-table" />
        </>
      )}
    </Card>
  );
}

interface Subscription {
  id: string;
  topic?: string;
  match?: string;
  matchType?: string;
  subscriber: string;
  active: boolean;
  payload?: unknown;
}

interface TailEvent {
  readonly id: string;
  readonly type: string;
  readonly data: string;
  readonly at: number;
}

function nodeOrigins(hubUrl: string, nodes: string): string[] {
  const listed = nodes
    .split(',')
    .map((node) => node.trim())
    .filter(Boolean);
  if (listed.length > 0) return listed.map((node) => new URL(node).origin);
  return [new URL(hubUrl).origin];
}

function authorization(token: string): Record<string, string> {
  return token ? { authorization: `Bearer ${token}` } : {};
}

function Nodes(props: { origins: string[] }) {
  const nodes = usePoll(
    () =>
      Promise.all(
        props.origins.map(async (origin) => {
          try {
            const [metrics, ready] = await Promise.all([
              fetch(`${origin}/metrics`).then((r) =>
                r.ok ? r.text() : Promise.reject(new Error(`HTTP ${r.status}`)),
              ),
              fetch(`${origin}/readyz`).then((r) => r.ok),
            ]);
            const samples = parsePrometheus(metrics);
            return {
              origin,
              ready,
              subscribers: sum(samples, 'mercure_subscribers_connected'),
              updates: sum(samples, 'mercure_updates_total'),
            };
          } catch (error) {
            return { origin, error: error instanceof Error ? error.message : String(error) };
          }
        }),
      ),
    3000,
    [props.origins.join(',')],
  );
  return (
    <Card title="Hub nodes">
      <Table
        testId="hub-nodes-table"
        rows={nodes.data ?? []}
        keyOf={(n) => n.origin}
        columns={[
          { title: 'Node', render: (n) => n.origin },
          { title: 'Ready', render: (n) => ('error' in n ? '—' : n.ready ? 'yes' : 'no') },
          {
            title: 'Connected subscribers',
            numeric: true,
            render: (n) => ('error' in n ? '—' : n.subscribers),
          },
          { title: 'Updates', numeric: true, render: (n) => ('error' in n ? '—' : n.updates) },
          {
            title: 'Problem',
            render: (n) =>
              'error' in n ? `${n.error} (is this console's origin in MERCURE_CORS_ORIGINS?)` : '',
          },
        ]}
      />
    </Card>
  );
}

function Subscriptions(props: { hubUrl: string; token: string }) {
  const subscriptions = usePoll(
    async () => {
      const response = await fetch(`${props.hubUrl}/subscriptions`, { headers: authorization(props.token) });
      if (!response.ok)
        throw new Error(
          `Subscriptions API: HTTP ${response.status}${response.status === 404 ? ' (MERCURE_SUBSCRIPTIONS=1 on the hub?)' : response.status === 401 || response.status === 403 ? ' (a subscriber token whose subscribe claim covers /.well-known/mercure/subscriptions is needed)' : ''}`,
        );
      return ((await response.json()) as { subscriptions: Subscription[] }).subscriptions;
    },
    3000,
    [props.hubUrl, props.token],
  );
  return (
    <Card title="Active subscriptions">
      <ErrorLine error={subscriptions.error} />
      <Table
        testId="hub-subscriptions-table"
        rows={subscriptions.data ?? []}
        keyOf={(s) => s.id}
        empty="No active subscription."
        columns={[
          { title: 'Selector', render: (s) => s.match ?? s.topic ?? '' },
          { title: 'Type', render: (s) => s.matchType ?? '' },
          { title: 'Subscriber', render: (s) => s.subscriber },
          { title: 'Payload', render: (s) => (s.payload === undefined ? '' : <Json value={s.payload} />) },
        ]}
      />
    </Card>
  );
}

function Tail(props: { hubUrl: string; token: string; selector: string }) {
  const [events, setEvents] = useState<readonly TailEvent[]>([]);
  const [state, setState] = useState('connecting');
  useEffect(() => {
    setEvents([]);
    const url = new URL(props.hubUrl);
    url.searchParams.append('match', props.selector);
    if (props.token) url.searchParams.set('authorization', props.token);
    const source = new EventSource(url);
    const receive = (event: MessageEvent<string>) =>
      setEvents((before) =>
        [{ id: event.lastEventId, type: event.type, data: event.data, at: Date.now() }, ...before].slice(
          0,
          100,
        ),
      );
    source.onopen = () => setState('open');
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    source.onmessage = receive;
    return () => source.close();
  }, [props.hubUrl, props.token, props.selector]);
  return (
    <Card
      title={`Live tail: ${props.selector}`}
      actions={
        <span class="badge" data-testid="tail-state">
          {state}
        </span>
      }
    >
      <Table
        testId="hub-tail-table"
        rows={events}
        keyOf={(e) => `${e.id}-${e.at}`}
        empty="Waiting for updates…"
        columns={[
          { title: 'Received', render: (e) => formatTime(new Date(e.at).toISOString()) },
          { title: 'Id', render: (e) => e.id },
          { title: 'Data', render: (e) => <pre class="json">{e.data}</pre> },
        ]}
      />
    </Card>
  );
}

export function HubView(props: { route: Route }) {
  const hubUrl = props.route.query.get('hub') ?? '';
  const nodes = props.route.query.get('nodes') ?? '';
  const selector = props.route.query.get('match') ?? '';
  const [token, setToken] = useState(() => sessionStorage.getItem(HUB_TOKEN_KEY) ?? '');
  const [adminToken, setAdminToken] = useState(() => sessionStorage.getItem(HUB_ADMIN_TOKEN_KEY) ?? '');
  const [draft, setDraft] = useState({ hub: hubUrl, nodes, match: selector, token, adminToken });
  let problem: string | undefined;
  let origins: string[] = [];
  try {
    if (hubUrl) origins = nodeOrigins(hubUrl, nodes);
  } catch {
    problem = 'The hub URL or a node URL is not a URL.';
  }
  return (
    <>
      <h1>Hub</h1>
      <Card title="Connect">
        <form
          class="stack-form"
          data-testid="hub-form"
          onSubmit={(event) => {
            event.preventDefault();
            sessionStorage.setItem(HUB_TOKEN_KEY, draft.token);
            setToken(draft.token);
            sessionStorage.setItem(HUB_ADMIN_TOKEN_KEY, draft.adminToken);
            setAdminToken(draft.adminToken);
            location.hash = withQuery(href('hub'), {
              hub: draft.hub,
              nodes: draft.nodes,
              match: draft.match,
            }).slice(1);
          }}
        >
          <label>
            <span>Hub URL</span>
            <input
              name="hub"
              placeholder="https://hub.example.com/.well-known/mercure"
              value={draft.hub}
              onInput={(event) => setDraft({ ...draft, hub: (event.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            <span>Node URLs (optional, comma-separated)</span>
            <input
              name="nodes"
              placeholder="http://hub-1:8080, http://hub-2:8080"
              value={draft.nodes}
              onInput={(event) => setDraft({ ...draft, nodes: (event.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            <span>Topic selector to tail</span>
            <input
              name="match"
              placeholder="https://example.com/books/{id}"
              value={draft.match}
              onInput={(event) => setDraft({ ...draft, match: (event.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            <span>Subscriber token (kept in this tab only)</span>
            <input
              name="token"
              type="password"
              value={draft.token}
              onInput={(event) => setDraft({ ...draft, token: (event.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            <span>Hub admin token, for the tenants' limits (optional, kept in this tab only)</span>
            <input
              name="adminToken"
              type="password"
              value={draft.adminToken}
              onInput={(event) =>
                setDraft({ ...draft, adminToken: (event.target as HTMLInputElement).value })
              }
            />
          </label>
          <button type="submit" class="primary">
            Connect
          </button>
        </form>
        <p class="muted small">
          The hub must list this console's origin (<code>{location.origin}</code>) in{' '}
          <code>MERCURE_CORS_ORIGINS</code>.
        </p>
        <ErrorLine error={problem} />
      </Card>
      {hubUrl && !problem && (
        <>
          <Nodes origins={origins} />
          <Subscriptions hubUrl={hubUrl} token={token} />
          {selector && <Tail hubUrl={hubUrl} token={token} selector={selector} />}
          {adminToken && <HubTenants hubUrl={hubUrl} token={adminToken} />}
        </>
      )}
    </>
  );
}
