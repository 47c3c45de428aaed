import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { type Capabilities, probeCapabilities, storedToken, storeToken } from './api.js';
import { ErrorLine } from './components.js';
import { href, useRoute } from './hooks.js';
import './style.css';
import { DeadLettersView } from './views/dead-letters.js';
import { GroupsView } from './views/groups.js';
import { HubView } from './views/hub.js';
import { OverviewView } from './views/overview.js';
import { QueueView } from './views/queue.js';
import { QueuesView } from './views/queues.js';
import { SystemView } from './views/system.js';
import { TracesView } from './views/traces.js';

const NAV = [
  ['overview', 'Overview'],
  ['queues', 'Queues'],
  ['groups', 'Consumer groups'],
  ['dlq', 'Dead letters'],
  ['traces', 'Traces'],
  ['system', 'System'],
  ['hub', 'Hub'],
] as const;

function TokenForm(props: { problem?: string | undefined; onToken: (token: string) => void }) {
  const [token, setToken] = useState('');
  return (
    <form
      class="card token-form"
      onSubmit={(event) => {
        event.preventDefault();
        if (token.trim()) props.onToken(token.trim());
      }}
    >
      <h2>Sign in</h2>
      <p>
        This broker requires a token (<code>JWT_ENABLED</code>). Paste a JWT: it stays in this tab's session
        storage only.
      </p>
      <ErrorLine error={props.problem} />
      <textarea
        name="token"
        rows={4}
        placeholder="eyJhbGciOi…"
        value={token}
        onInput={(event) => setToken((event.target as HTMLTextAreaElement).value)}
      />
      <button type="submit" class="primary">
        Use this token
      </button>
    </form>
  );
}

function roleText(caps: Capabilities): string {
  if (!storedToken() || caps.tokenProblem) return 'signed out';
  if (caps.admin) return 'admin';
  if (caps.write && caps.read) return 'read-write';
  if (caps.read) return 'read-only';
  if (caps.write) return 'write-only';
  return 'no access';
}

function App() {
  const route = useRoute();
  const [caps, setCaps] = useState<Capabilities | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [menuOpen, setMenuOpen] = useState(false);
  const probe = () =>
    probeCapabilities().then(setCaps, (caught: unknown) =>
      setError(caught instanceof Error ? caught.message : String(caught)),
    );
  useEffect(() => {
    void probe();
  }, []);
  const view = route.path[0] ?? 'overview';
  useEffect(() => setMenuOpen(false), [view, route.path[1]]);

  let body = null;
  if (!caps) body = error ? <ErrorLine error={error} /> : <p class="muted">Connecting to the broker…</p>;
  else if (caps.authRequired && (!storedToken() || caps.tokenProblem))
    body = (
      <TokenForm
        problem={caps.tokenProblem}
        onToken={(token) => {
          storeToken(token);
          setCaps(undefined);
          void probe();
        }}
      />
    );
  else if (!caps.read)
    body = <ErrorLine error="This token may not read the broker's views (it needs a read role)." />;
  else if (view === 'queues' && route.path[1])
    body = <QueueView name={route.path[1]} caps={caps} route={route} />;
  else if (view === 'queues') body = <QueuesView caps={caps} />;
  else if (view === 'groups') body = <GroupsView caps={caps} route={route} />;
  else if (view === 'dlq') body = <DeadLettersView caps={caps} route={route} />;
  else if (view === 'traces') body = <TracesView route={route} />;
  else if (view === 'system') body = <SystemView caps={caps} />;
  else if (view === 'hub') body = <HubView route={route} />;
  else body = <OverviewView caps={caps} />;

  return (
    <div class="shell">
      <header class="top">
        <button type="button" class="menu-toggle" aria-label="Menu" onClick={() => setMenuOpen(!menuOpen)}>
          ☰
        </button>
        <a class="brand" href={href('overview')}>
          Herald <span>console</span>
        </a>
        {caps && (
          <div class="who">
            <span class="badge" data-testid="role">
              {caps.authRequired ? roleText(caps) : 'auth off'}
            </span>
            {caps.authRequired && storedToken() && (
              <button
                type="button"
                class="link"
                onClick={() => {
                  storeToken(undefined);
                  setCaps(undefined);
                  void probe();
                }}
              >
                Sign out
              </button>
            )}
          </div>
        )}
      </header>
      <nav class={menuOpen ? 'side open' : 'side'}>
        {NAV.map(([key, label]) => (
          <a key={key} href={href(key)} class={view === key ? 'active' : undefined}>
            {label}
          </a>
        ))}
      </nav>
      <main class="content" data-view={view}>
        {body}
      </main>
    </div>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
