/*
 * The outbox relay (docs/broker-outbox.md, "Watching the relay"): each bridged or listed queue's
 * outbox with its waiting intents, the age of the oldest and the intents the hub refused for
 * good. The System view shows it to any token that may read.
 */
import { Age, Card, Loading, Table } from '../components.js';
import { href } from '../hooks.js';
import type { OutboxRow, OutboxStatus } from '../types.js';

/** An outbox whose oldest waiting intent is older than this (seconds) is shown as lagging. */
export const LAGGING_SECONDS = 5;

const isLagging = (row: OutboxRow) => row.lagSeconds > LAGGING_SECONDS;

/** Outboxes needing a look first (refused, then lagging), then by lag, then by name. */
function attentionFirst(a: OutboxRow, b: OutboxRow): number {
  const score = (row: OutboxRow) => (row.refused > 0 ? 2 : 0) + (isLagging(row) ? 1 : 0);
  return score(b) - score(a) || b.lagSeconds - a.lagSeconds || (a.queue < b.queue ? -1 : 1);
}

export function OutboxCard(props: {
  status: OutboxStatus | undefined;
  error: string | undefined;
  loadedAt: number | undefined;
}) {
  return (
    <Card title="Outbox relay to the hub" actions={<Age at={props.loadedAt} />}>
      <Loading when={props.status} error={props.error}>
        {() => {
          const status = props.status as OutboxStatus;
          const rows = [...status.outboxes].sort(attentionFirst);
          return (
            <>
              {status.relaying ? (
                <p class="muted small" data-testid="outbox-relaying">
                  This node relays the outboxes to the hub.
                </p>
              ) : (
                // Alarming only when intents wait: a node without a hub is a choice, not a fault.
                <p
                  class={rows.some((row) => row.pending > 0) ? 'error' : 'muted'}
                  data-testid="outbox-relaying"
                >
                  Not relaying: no hub configured on this node (BROKER_HUB_URL). Another node with one relays
                  these outboxes.
                </p>
              )}
              <Table
                testId="outbox-table"
                rows={rows}
                keyOf={(row) => row.queue}
                empty="No bridged queue and no outbox waiting."
                columns={[
                  { title: 'Queue', render: (row) => <a href={href('queues', row.queue)}>{row.queue}</a> },
                  { title: 'Pending', numeric: true, render: (row) => row.pending },
                  {
                    title: 'Lag',
                    numeric: true,
                    render: (row) => (
                      <span class={isLagging(row) ? 'badge alert' : undefined}>
                        {row.lagSeconds.toFixed(1)} s{isLagging(row) ? ' — lagging' : ''}
                      </span>
                    ),
                  },
                  {
                    title: 'Refused',
                    numeric: true,
                    render: (row) => (
                      <span class={row.refused > 0 ? 'badge alert' : undefined}>
                        {row.refused}
                        {row.refused > 0 ? ' — refused by the hub' : ''}
                      </span>
                    ),
                  },
                ]}
              />
              <p class="muted small">
                Lag: age of the oldest intent waiting (marked past {LAGGING_SECONDS} s). Refused: updates the
                hub refused for good (a 4xx), kept aside and not retried.
              </p>
            </>
          );
        }}
      </Loading>
    </Card>
  );
}
