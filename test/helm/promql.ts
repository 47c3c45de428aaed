// Extracts the metric names a PromQL expression (or a Grafana query) reads. Not a PromQL parser:
// enough for the expressions this chart ships, which the tests also check against the contract
// and against what the services export.

const KEYWORDS = new Set([
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
  'bool',
  'and',
  'or',
  'unless',
  'offset',
  'inf',
  'nan',
  'atan2',
]);

export function metricNamesInPromQL(expression: string): Set<string> {
  const text = expression
    // Grafana's label_values(selector, label): keep the selector, drop the label name.
    .replace(/label_values\(\s*([^,()]*?(?:\{[^}]*\})?)\s*,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)/g, ' $1 ')
    .replace(/label_values\(\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)/g, ' ')
    // Strings (label values, which may hold Grafana variables and regexes).
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    // Label matchers, then ranges/subqueries ([5m], [$__rate_interval]).
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    // Grouping and matching clauses list label names, not metrics.
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    // Grafana variables outside strings.
    .replace(/\$\{[^}]*\}|\$[a-zA-Z_][a-zA-Z0-9_]*/g, ' ');
  const names = new Set<string>();
  for (const match of text.matchAll(/[0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?[a-zA-Z]*|[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const token = match[0];
    if (/^[0-9.]/.test(token)) continue; // numbers and durations
    const rest = text.slice((match.index ?? 0) + token.length);
    if (/^\s*\(/.test(rest)) continue; // function or aggregation call
    if (KEYWORDS.has(token.toLowerCase())) continue;
    names.add(token);
  }
  return names;
}

export interface DashboardQuery {
  readonly expr: string;
  /** The panel title, or the templating variable the query defines. */
  readonly panel?: string;
  readonly variable?: string;
}

/** Every PromQL query of a Grafana dashboard: panel targets (rows included) and templating. */
export function dashboardQueries(dashboard: unknown): DashboardQuery[] {
  type Panel = { title?: string; targets?: { expr?: string }[]; panels?: Panel[] };
  const board = dashboard as {
    panels?: Panel[];
    templating?: { list?: { name: string; type?: string; query?: string | { query?: string } }[] };
  };
  const queries: DashboardQuery[] = [];
  const visit = (panels: Panel[] | undefined) => {
    for (const panel of panels ?? []) {
      for (const target of panel.targets ?? [])
        if (target.expr) queries.push({ expr: target.expr, panel: panel.title ?? '' });
      visit(panel.panels);
    }
  };
  visit(board.panels);
  for (const variable of board.templating?.list ?? []) {
    if (variable.type !== 'query') continue;
    const query = typeof variable.query === 'string' ? variable.query : variable.query?.query;
    if (query) queries.push({ expr: query, variable: variable.name });
  }
  return queries;
}
