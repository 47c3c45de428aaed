/*
 * Tenants near their limits (issue #24, item 2; docs/security.md, "Limits per tenant"): the
 * table the System view (the broker's limits) and the Hub view (the hub's) both show, fullest
 * first, each tenant at 80% or more of a limit marked.
 */
import { Table } from '../components.js';
import type { TenantUsage } from '../types.js';

/** A tenant at or past this share of its limit is shown as near it. */
const NEAR_LIMIT = 0.8;

interface TenantRow extends TenantUsage {
  readonly kind: string;
  readonly share: number;
}

/**
 * The tenants of `usage` (kind → tenants seen in the last 10 minutes) that have a limit, fullest
 * first; `kindNames` says what each kind counts.
 */
export function TenantUsageTable(props: {
  usage: Readonly<Record<string, readonly TenantUsage[]>>;
  kindNames: Readonly<Record<string, string>>;
  testId: string;
}) {
  const rows: TenantRow[] = Object.entries(props.usage)
    .flatMap(([kind, entries]) =>
      entries
        .filter((entry) => entry.limit >= 0)
        .map((entry) => ({ ...entry, kind, share: entry.limit === 0 ? 1 : entry.used / entry.limit })),
    )
    .sort((a, b) => b.share - a.share);
  return (
    <Table
      testId={props.testId}
      rows={rows}
      keyOf={(row) => `${row.kind}\n${row.tenant}`}
      empty="No tenant with a limit was seen in the last 10 minutes."
      columns={[
        { title: 'Tenant', render: (row) => row.tenant },
        { title: 'Limit', render: (row) => props.kindNames[row.kind] ?? row.kind },
        { title: 'Used', numeric: true, render: (row) => row.used },
        { title: 'Of', numeric: true, render: (row) => row.limit },
        {
          title: 'Share',
          numeric: true,
          render: (row) => (
            <span class={row.share >= NEAR_LIMIT ? 'badge near-limit' : undefined}>
              {Math.round(row.share * 100)}%{row.share >= NEAR_LIMIT ? ' — near its limit' : ''}
            </span>
          ),
        },
      ]}
    />
  );
}

/** A default or an override as the views print it. */
export const limitSetting = (value: number | null): string => (value === null ? 'off' : String(value));
