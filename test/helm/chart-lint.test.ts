// helm lint --strict over every values file in helm/herald/ci, and values.schema.json rejecting
// malformed values before anything renders.

import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { type ChartOptions, ciValues, ciValuesDir, lintChart, templateChart } from './helm.js';

test('every ci/*.yaml is registered in the test helper', () => {
  const files = readdirSync(ciValuesDir).filter((file) => file.endsWith('.yaml'));
  assert.deepEqual(
    files.map((file) => join(ciValuesDir, file)).sort(),
    Object.values(ciValues).sort(),
    'a new ci values file must be added to ciValues in test/helm/helm.ts so every test covers it',
  );
});

test('helm lint --strict passes with the chart defaults alone', () => {
  const result = lintChart();
  assert.equal(result.status, 0, result.stdout + result.stderr);
  assert.match(result.stdout, /1 chart\(s\) linted, 0 chart\(s\) failed/);
});

for (const [name, file] of Object.entries(ciValues)) {
  test(`helm lint --strict passes with ci/${name}`, () => {
    const result = lintChart({ valuesFiles: [file] });
    assert.equal(result.status, 0, result.stdout + result.stderr);
    assert.doesNotMatch(result.stdout, /\[(ERROR|WARNING)\]/);
  });
}

// Each case: values that values.schema.json must refuse, and the path its message names.
const schemaRejections: { what: string; options: ChartOptions; path: RegExp }[] = [
  {
    what: 'non-integer replicas',
    options: { setString: ['hub.replicaCount=x'] },
    path: /\/hub\/replicaCount/,
  },
  { what: 'negative replicas', options: { set: ['broker.replicaCount=-1'] }, path: /\/broker\/replicaCount/ },
  { what: 'an unknown top-level key', options: { set: ['replicas=3'] }, path: /replicas/ },
  { what: 'a misspelt component key', options: { set: ['hub.replicas=3'] }, path: /\/hub.*replicas/ },
  {
    what: 'a Sentinel URL',
    options: { setString: ['redis.url=redis+sentinel://s:26379/mymaster'] },
    path: /\/redis\/url/,
  },
  { what: 'an unknown log level', options: { set: ['broker.logLevel=verbose'] }, path: /\/broker\/logLevel/ },
  {
    what: 'an unknown broker algorithm',
    options: { set: ['broker.auth.algorithm=none'] },
    path: /\/broker\/auth\/algorithm/,
  },
  {
    what: 'a port out of range',
    options: { set: ['hub.containerPort=70000'] },
    path: /\/hub\/containerPort/,
  },
  {
    what: 'a string drain window',
    options: { setString: ['hub.drainWindowSeconds=10s'] },
    path: /\/hub\/drainWindowSeconds/,
  },
  {
    what: 'a malformed heartbeat',
    options: { setString: ['hub.mercure.heartbeat=soon'] },
    path: /\/hub\/mercure\/heartbeat/,
  },
  {
    what: 'a boolean given as text',
    options: { setString: ['hub.mercure.anonymous=yes'] },
    path: /\/hub\/mercure\/anonymous/,
  },
  { what: 'a bad image digest', options: { set: ['image.digest=latest'] }, path: /\/image\/digest/ },
];

for (const { what, options, path } of schemaRejections) {
  test(`values.schema.json rejects ${what} (lint and template)`, () => {
    const withDefaults: ChartOptions = { ...options, valuesFiles: [ciValues.default] };
    const lint = lintChart(withDefaults);
    assert.notEqual(lint.status, 0, `helm lint accepted ${what}`);
    assert.match(lint.stdout + lint.stderr, /values don't meet the specifications of the schema/);
    assert.match(lint.stdout + lint.stderr, path);
    const template = templateChart(withDefaults);
    assert.notEqual(template.status, 0, `helm template accepted ${what}`);
    assert.match(template.stderr, path);
  });
}
