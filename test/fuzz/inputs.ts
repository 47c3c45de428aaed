import fc from 'fast-check';
import type { RawRequest } from '../security/raw-http.js';
import type { RouteSpec } from './routes.js';

/** Strings at the edges validators get wrong. Lone surrogates, controls, sizes around limits. */
export const BOUNDARY_STRINGS: readonly string[] = [
  '',
  ' ',
  'a',
  'q'.repeat(100),
  'q'.repeat(101),
  'q'.repeat(512),
  'q'.repeat(513),
  'q'.repeat(5000),
  '\uD800',
  'a\uDC00b',
  '\u0000',
  '\u0001\u001f\u007f',
  '\r\n',
  '../..',
  '%',
  '%zz',
  '{"a":1}',
  '1e308',
  '-0',
  'NaN',
  'Infinity',
  'null',
  'true',
  '💥',
  '*',
  '{+path}',
  'https://example.com/{id}',
  'https://example.com/a{1000}',
  '<script>',
  'a'.repeat(40) + '{1000}'.repeat(40),
];

export const BOUNDARY_NUMBERS: readonly number[] = [
  0,
  -0,
  1,
  -1,
  0.5,
  1e20,
  1e308,
  -1e308,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
];

/** The boundary strings a URL can carry as text (encodeURIComponent refuses lone surrogates). */
const WELL_FORMED = BOUNDARY_STRINGS.filter(
  (text) => !/[\uD800-\uDFFF]/.test(text.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, '')),
);

/** Values a JSON body may carry in any field. */
const scalar = fc.oneof(
  fc.constantFrom(...BOUNDARY_STRINGS),
  fc.constantFrom(...BOUNDARY_NUMBERS),
  fc.string({ maxLength: 40, unit: 'binary' }),
  fc.integer(),
  fc.double({ noNaN: true }),
  fc.boolean(),
  fc.constant(null),
);

/**
 * A JSON body built from the field names the service reads, so random values reach the
 * handlers' validation and storage rather than stopping at "unknown shape".
 */
export function jsonBody(fieldNames: readonly string[]): fc.Arbitrary<unknown> {
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      scalar,
      fc.array(tie('value'), { maxLength: 4 }),
      tie('object'),
    ),
    object: fc.dictionary(
      fc.oneof(fc.constantFrom(...fieldNames), fc.string({ maxLength: 8 })),
      tie('value'),
      {
        maxKeys: 6,
      },
    ),
  }));
  return fc.oneof(
    fc.dictionary(fc.constantFrom(...fieldNames), value, { maxKeys: 8 }),
    fc.jsonValue({ maxDepth: 4 }),
    value,
  );
}

/** A path segment as it appears on the wire: encoded text, raw bytes of bad UTF-8, traversal. */
const pathSegment = fc.oneof(
  fc.constantFrom(
    '',
    '%ED%A0%80',
    '%uD800',
    '%00',
    '%2F',
    '%2e%2e',
    '..',
    ';',
    'q'.repeat(512),
    'q'.repeat(513),
    'q'.repeat(4000),
    '%FF',
    '%',
  ),
  fc.constantFrom(...WELL_FORMED).map(encodeURIComponent),
  fc.string({ maxLength: 30 }).map(encodeURIComponent),
);

/** A query value on the wire: mostly encoded text, sometimes raw percent junk. */
/** Issue #8's selector: ~4 KiB of bounded repetitions, ~0.9 s and ~40 MiB to compile on ce84a74. */
export const HOSTILE_SELECTOR = 'a{1000}'.repeat(585);

const queryValue = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom(...WELL_FORMED).map(encodeURIComponent) },
  {
    weight: 10,
    arbitrary: fc.constantFrom(
      ...BOUNDARY_NUMBERS.map(String),
      '1e20',
      'NaN',
      '-1',
      'true',
      'false',
      '%ED%A0%80',
      '%',
    ),
  },
  { weight: 10, arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent) },
  { weight: 1, arbitrary: fc.constant(encodeURIComponent(HOSTILE_SELECTOR)) },
);

export interface Vocabulary {
  /** Query parameter names the service reads. */
  readonly queryNames: readonly string[];
  /** JSON body fields the service reads. */
  readonly bodyFields: readonly string[];
  /** Authorization header values: valid tokens of several roles, and junk. */
  readonly authorizations: readonly string[];
  /** Extra fixed headers on every request (e.g. X-Forwarded-Proto for the hub). */
  readonly baseHeaders?: Readonly<Record<string, string>>;
  /** Bodies to send as form fields (the hub's publish), as well as JSON. */
  readonly formFields?: readonly string[];
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/x-www-form-urlencoded',
  'text/plain',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
  '',
  'application/json; charset=latin1',
];

function fill(path: string, segments: readonly string[]): string {
  let index = 0;
  return path.replace(/:[A-Za-z]+|\*/g, () => segments[index++] ?? 'x');
}

function formBody(fields: readonly string[]): fc.Arbitrary<string> {
  return fc
    .array(fc.tuple(fc.constantFrom(...fields, 'x'), queryValue), { maxLength: 8 })
    .map((pairs) => pairs.map(([name, value]) => `${name}=${value}`).join('&'));
}

/** Random requests over the given routes: paths, queries, headers and bodies all fuzzed. */
export function randomRequest(
  routes: readonly RouteSpec[],
  vocabulary: Vocabulary,
): fc.Arbitrary<RawRequest> {
  const route = fc.constantFrom(...routes);
  const method = fc.oneof(
    { weight: 9, arbitrary: fc.constant(undefined) },
    fc.constantFrom('PUT', 'PATCH', 'DELETE', 'POST', 'GET'),
  );
  const query = fc
    .array(
      fc.tuple(fc.constantFrom(...vocabulary.queryNames, 'x', 'authorization', 'access_token'), queryValue),
      {
        maxLength: 6,
      },
    )
    .map((pairs) =>
      pairs.length === 0 ? '' : `?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`,
    );
  const headers = fc.record(
    {
      authorization: fc.constantFrom(...vocabulary.authorizations),
      'content-type': fc.constantFrom(...CONTENT_TYPES),
      'last-event-id': queryValue,
      origin: fc.constantFrom('null', 'https://example.com', 'http://evil.example'),
      cookie: fc.constantFrom(
        ...vocabulary.authorizations.map((value) => `mercureAuthorization=${value.replace(/^Bearer /, '')}`),
      ),
      accept: fc.constantFrom('text/event-stream', 'application/json', '*/*'),
      'x-request-id': fc.constantFrom('a', 'x'.repeat(200), '\t'),
    },
    { requiredKeys: [] },
  );
  const body = fc.oneof(
    { weight: 2, arbitrary: fc.constant(undefined) },
    { weight: 5, arbitrary: jsonBody(vocabulary.bodyFields).map((value) => JSON.stringify(value) ?? 'null') },
    { weight: 2, arbitrary: formBody(vocabulary.formFields ?? vocabulary.bodyFields) },
    fc.constantFrom('{', '[1,', 'NaN', '1e999', '-0', '"\\ud800"', '{"a":1}{"a":2}', '\u0000'),
  );
  return fc
    .record({
      route,
      method,
      segments: fc.array(pathSegment, { minLength: 4, maxLength: 4 }),
      query,
      headers,
      body,
    })
    .map(({ route: chosen, method: override, segments, query: search, headers: extra, body: text }) => {
      const all: Record<string, string> = { ...vocabulary.baseHeaders };
      for (const [name, value] of Object.entries(extra)) if (value !== undefined) all[name] = value;
      if (text !== undefined && all['content-type'] === undefined) all['content-type'] = 'application/json';
      return {
        method: override ?? chosen.method,
        target: `${fill(chosen.path, segments)}${search}`,
        headers: all,
        ...(text !== undefined ? { body: text } : {}),
      };
    });
}

/** Nesting far deeper than any document needs (JSON.parse copes; recursive walkers may not). */
export const DEEP = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;

/** One element of a long list: a string for id/name lists, else an object with every usual field. */
function listElement(field: string, index: number): unknown {
  if (/names|ids$/i.test(field)) return `n${index}`;
  return {
    queue: 'q',
    partition: 'p',
    partitionId: '00000000-0000-0000-0000-000000000000',
    transactionId: `t${index}`,
    leaseId: 'l',
    status: 'completed',
    type: 'push',
    payload: { index },
    item: { queue: 'q', payload: { index } },
    ack: { transactionId: `t${index}`, partitionId: 'p', status: 'completed' },
  };
}

/**
 * Deterministic boundary bodies for every route that takes one: nesting 10,000 deep, lone
 * surrogates and 1e308 in every field; on the route that reads it, each list field long (past
 * the documented bound), the other fields set to a plain name so validation reaches the list.
 */
export function boundaryRequests(
  routes: readonly RouteSpec[],
  vocabulary: Vocabulary,
  /** Each list field, the route path that reads it, and the lengths to send it with. */
  lists: Readonly<Record<string, { readonly path: string; readonly lengths: readonly number[] }>>,
): RawRequest[] {
  const requests: RawRequest[] = [];
  const headers = {
    ...vocabulary.baseHeaders,
    authorization: vocabulary.authorizations[0] ?? '',
    'content-type': 'application/json',
  };
  const everyField = (raw: string) =>
    `{${vocabulary.bodyFields.map((field) => `"${field}":${raw}`).join(',')}}`;
  const plain = Object.fromEntries(vocabulary.bodyFields.map((field) => [field, 'q']));
  for (const route of routes) {
    if (route.method !== 'POST' && route.method !== 'PUT' && route.method !== 'DELETE') continue;
    const target = fill(route.path, ['q', '0', 'x', 'y']);
    const bodies: string[] = [
      DEEP,
      '1e999',
      '"\\ud800"',
      everyField(DEEP.slice(0, 4000) + DEEP.slice(-4000)),
      everyField('"\\ud800"'),
      everyField('1e308'),
      everyField('-1e308'),
      everyField('1e20'),
      `{"items":[{"queue":"q","payload":${DEEP}}]}`,
    ];
    for (const [field, list] of Object.entries(lists)) {
      if (list.path !== route.path) continue;
      // One element whose every string is a boundary string: a lone surrogate as a queue name…
      const sample = listElement(field, 0);
      for (const text of BOUNDARY_STRINGS) {
        const element =
          typeof sample === 'string'
            ? text
            : Object.fromEntries(
                Object.entries(sample as object).map(([key, value]) => [
                  key,
                  typeof value === 'string' ? text : value,
                ]),
              );
        bodies.push(JSON.stringify({ ...plain, [field]: [element] }));
      }
      for (const length of list.lengths) {
        const elements = Array.from({ length }, (_, index) => listElement(field, index));
        bodies.push(JSON.stringify({ ...plain, [field]: elements }));
      }
    }
    for (const body of bodies) requests.push({ method: route.method, target, headers, body });
  }
  return requests;
}
