#!/usr/bin/env node
// Runs every test of the repo in one node test run, so CI reads one closing summary.
// Usage: node scripts/run-tests.mjs [--root DIR] [path-prefix ...]   (e.g. shared/auth test/hub)
//
// One pattern (README.md, "Test it"): a test is a file named `*.test.ts`, anywhere in the repo
// outside node_modules, dist, .git and the tool caches .gitignore lists (SKIPPED below). A file
// named `*.test.<anything else>` would never run, so its presence fails the run, whatever the
// path prefixes (issue #11: tests cannot hide).
// Fails when a test fails, when a test is skipped or left todo, and when zero tests ran.
// `--root` points the runner at another tree (its own test, test/scripts/run-tests.test.ts).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const SKIPPED = new Set(['node_modules', 'dist', '.git', '.turbo', '.tmp', '.helm', '.node-lts', 'coverage']);
const TEST_FILE = /\.test\.ts$/;
/** What a reader takes for a test file: `name.test.<extension>`. */
const LOOKS_LIKE_A_TEST = /\.test\.[^.]+$/;

const args = process.argv.slice(2);
let root = fileURLToPath(new URL('..', import.meta.url));
const rootAt = args.indexOf('--root');
if (rootAt >= 0) {
  const given = args[rootAt + 1];
  if (!given) {
    console.error('--root needs a directory');
    process.exit(1);
  }
  root = resolve(given);
  args.splice(rootAt, 2);
}
const filters = args.map((filter) => filter.replace(/\/+$/, ''));

/** Every file under `directory` whose name looks like a test, recursively, sorted. */
function candidatesUnder(directory) {
  const found = [];
  for (const entry of readdirSync(directory, { withFileTypes: true }).sort((a, b) =>
    a.name < b.name ? -1 : 1,
  )) {
    if (SKIPPED.has(entry.name)) continue;
    const path = join(directory, entry.name);
    if (entry.isDirectory()) found.push(...candidatesUnder(path));
    else if (entry.isFile() && LOOKS_LIKE_A_TEST.test(entry.name)) found.push(relative(root, path));
  }
  return found;
}

const candidates = candidatesUnder(root);
const misnamed = candidates.filter((path) => !TEST_FILE.test(path));
if (misnamed.length > 0) {
  for (const path of misnamed) console.error(`not run: ${path} (tests are named *.test.ts)`);
  console.log(`0 passed, ${misnamed.length} failed`);
  process.exit(1);
}
const files = candidates.filter(
  (path) => filters.length === 0 || filters.some((filter) => path.startsWith(filter)),
);

if (files.length === 0) {
  console.error(`no test files found${filters.length ? ` under ${filters.join(', ')}` : ''}`);
  console.log('0 passed, 0 failed');
  process.exit(1);
}

const reportDirectory = mkdtempSync(join(tmpdir(), 'herald-tests-'));
const tapFile = join(reportDirectory, 'report.tap');
const concurrency = process.env.TEST_CONCURRENCY ?? '3';
const child = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=180000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=tap',
    `--test-reporter-destination=${tapFile}`,
    ...files,
  ],
  { cwd: root, stdio: 'inherit' },
);
const exitCode = await new Promise((resolve) =>
  child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0))),
);

const tap = readFileSync(tapFile, 'utf8');
rmSync(reportDirectory, { recursive: true, force: true });
const count = (name) => {
  const matches = [...tap.matchAll(new RegExp(`^# ${name} (\\d+)$`, 'gm'))];
  return matches.length ? Number(matches.at(-1)[1]) : 0;
};
const [tests, passed, failed, skipped, todo, cancelled] = [
  'tests',
  'pass',
  'fail',
  'skipped',
  'todo',
  'cancelled',
].map(count);

const problems = [];
if (tests === 0) problems.push('zero tests ran');
if (skipped > 0) problems.push(`${skipped} skipped (a skipped test is a defect)`);
if (todo > 0) problems.push(`${todo} todo`);
if (cancelled > 0) problems.push(`${cancelled} cancelled`);
if (exitCode !== 0 && failed === 0) problems.push(`test runner exited with ${exitCode}`);

console.log(`\n${files.length} test files, ${tests} tests`);
for (const problem of problems) console.log(`problem: ${problem}`);
console.log(`${passed} passed, ${failed + cancelled} failed`);
process.exit(failed > 0 || problems.length > 0 ? 1 : 0);
