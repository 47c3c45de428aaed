/*
 * The test runner (scripts/run-tests.mjs) finds tests by one pattern, recursively, and fails
 * when a file looks like a test but would not run (issue #11, item 6). Each case builds a small
 * tree under the repo's `.tmp/` (so the child resolves tsx from the repo) and runs the runner on it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const runner = join(repo, 'scripts', 'run-tests.mjs');
mkdirSync(join(repo, '.tmp'), { recursive: true });
const trees: string[] = [];
after(() => {
  for (const tree of trees) rmSync(tree, { recursive: true, force: true });
});

const PASSING = "import { test } from 'node:test';\ntest('passes', () => {});\n";
const FAILING = "import { test } from 'node:test';\ntest('fails', () => { throw new Error('ran'); });\n";

function tree(files: Record<string, string>): string {
  const root = mkdtempSync(join(repo, '.tmp', 'run-tests-'));
  trees.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

async function run(root: string, ...filters: string[]) {
  // Without NODE_TEST_CONTEXT: node would take the runner's own test run for a nested one.
  const { NODE_TEST_CONTEXT: _nested, ...env } = process.env;
  const child = spawn(process.execPath, [runner, '--root', root, ...filters], {
    env: { ...env, TEST_CONCURRENCY: '1' },
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  return { code, output };
}

test('finds *.test.ts at any depth and skips node_modules, dist and .git', async () => {
  const root = tree({
    'top.test.ts': PASSING,
    'services/x/test/deep/nested/inner.test.ts': PASSING,
    'node_modules/pkg/vendored.test.ts': FAILING,
    'services/x/dist/built.test.ts': FAILING,
    '.git/hooks/hook.test.ts': FAILING,
  });
  const { code, output } = await run(root);
  assert.equal(code, 0, output);
  assert.match(output, /^2 test files, 2 tests$/m);
  assert.match(output, /^2 passed, 0 failed$/m);
});

test('a path prefix selects the tests under it', async () => {
  const root = tree({ 'a/one.test.ts': PASSING, 'b/two.test.ts': FAILING });
  const { code, output } = await run(root, 'a');
  assert.equal(code, 0, output);
  assert.match(output, /^1 test files, 1 tests$/m);
});

test('a file named like a test that would not run fails the run, whatever the prefixes', async () => {
  const root = tree({
    'a/one.test.ts': PASSING,
    'b/deep/two.test.js': PASSING,
    'c/three.test.mts': PASSING,
  });
  for (const filters of [[], ['a']]) {
    const { code, output } = await run(root, ...filters);
    assert.equal(code, 1, output);
    assert.match(output, /^not run: b\/deep\/two\.test\.js \(tests are named \*\.test\.ts\)$/m);
    assert.match(output, /^not run: c\/three\.test\.mts /m);
  }
});

test('a failing test fails the run', async () => {
  const { code, output } = await run(tree({ 'x.test.ts': FAILING }));
  assert.equal(code, 1, output);
  assert.match(output, /^0 passed, 1 failed$/m);
});
