#!/usr/bin/env node
// Runs every test of the repo in one node test run, so CI reads one closing summary.
// Usage: node scripts/run-tests.mjs [path-prefix ...]   (e.g. shared/auth test/hub)
// Fails when a test fails, when a test is skipped or left todo, and when zero tests ran.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const filters = process.argv.slice(2).map((filter) => filter.replace(/\/+$/, ''));

function testFilesUnder(directory, recursive) {
  let entries;
  try {
    entries = readdirSync(directory);
  } catch {
    return [];
  }
  const files = [];
  for (const entry of entries.sort()) {
    if (entry === 'node_modules' || entry === 'dist' || entry.startsWith('.')) continue;
    const path = join(directory, entry);
    if (statSync(path).isDirectory()) {
      if (recursive) files.push(...testFilesUnder(path, true));
    } else if (entry.endsWith('.test.ts')) {
      files.push(path);
    }
  }
  return files;
}

function packageDirectories(parent) {
  return readdirSync(join(root, parent))
    .sort()
    .map((name) => join(root, parent, name))
    .filter((path) => statSync(path).isDirectory());
}

const files = [
  ...packageDirectories('shared').flatMap((dir) => testFilesUnder(join(dir, 'test'), false)),
  ...packageDirectories('services').flatMap((dir) => testFilesUnder(join(dir, 'test'), false)),
  ...testFilesUnder(join(root, 'test'), true),
]
  .map((path) => relative(root, path))
  .filter((path) => filters.length === 0 || filters.some((filter) => path.startsWith(filter)));

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
