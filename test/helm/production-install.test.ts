// Replays the Dockerfile's production stage without Docker (no engine runs here): stage the same
// tree (manifests, lockfile, dist/ and lua/ per workspace), run the production stage's own
// `npm ci` command line, then start both services from that tree with no REDIS_URL and check
// /healthz. Catches a runtime import of a devDependency, a missing lua/ folder, or a dist/ that
// needs its sources.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, test } from 'node:test';
import { repoRoot } from './helm.js';
import { entryPoint, hubTestEnvironment, type RunningService, startService } from './services.js';

const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');

/** Dockerfile instructions with line continuations joined and comments dropped. */
function instructions(text: string): string[] {
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

/** The arguments after `npm ci` in the production stage's RUN instruction. */
function productionNpmCiArguments(): string[] {
  const lines = instructions(dockerfile);
  const stage = lines.findIndex((line) => /^FROM\s+\S+\s+AS\s+production$/i.test(line));
  assert.ok(stage >= 0, 'the Dockerfile has a stage named production');
  const run = lines.slice(stage + 1).find((line) => /^RUN\b.*\bnpm ci\b/.test(line));
  assert.ok(run, 'the production stage runs npm ci');
  const command = run.slice(run.indexOf('npm ci') + 'npm ci'.length).split('&&')[0] ?? '';
  return command.trim().split(/\s+/);
}

/** Workspace folders from the root package.json (`dir/*` globs and plain folders). */
function workspaceFolders(): string[] {
  const manifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    workspaces: string[];
  };
  return manifest.workspaces.flatMap((pattern) => {
    if (!pattern.endsWith('/*')) return [pattern];
    const parent = pattern.slice(0, -2);
    return readdirSync(join(repoRoot, parent)).map((entry) => `${parent}/${entry}`);
  });
}

/** The Dockerfile's staging loop: package.json, dist/ and lua/ per workspace; no .tsbuildinfo. */
function stageProductionTree(target: string): void {
  cpSync(join(repoRoot, 'package.json'), join(target, 'package.json'));
  cpSync(join(repoRoot, 'package-lock.json'), join(target, 'package-lock.json'));
  for (const folder of workspaceFolders()) {
    const source = join(repoRoot, folder);
    if (!existsSync(join(source, 'package.json'))) continue;
    mkdirSync(join(target, folder), { recursive: true });
    cpSync(join(source, 'package.json'), join(target, folder, 'package.json'));
    for (const part of ['dist', 'lua']) {
      if (!existsSync(join(source, part))) continue;
      cpSync(join(source, part), join(target, folder, part), {
        recursive: true,
        filter: (path) => !path.endsWith('.tsbuildinfo'),
      });
    }
  }
}

function filesUnder(directory: string, skip: (path: string) => boolean): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(directory)) {
    const path = join(directory, entry);
    if (skip(path)) continue;
    if (statSync(path).isDirectory()) files.push(...filesUnder(path, skip));
    else files.push(path);
  }
  return files;
}

/**
 * npm ci as in the image, offline first. The npm cache here is warm, but this repository's npm
 * config sets omit-lockfile-registry-resolved, so the lockfile has no tarball URLs and npm must
 * read each package's metadata: `--offline` succeeds only once that metadata is cached too
 * (ENOTCACHED otherwise), in which case `--prefer-offline` fetches just the missing metadata.
 */
function npmCi(cwd: string, args: readonly string[]): { mode: string; output: string } {
  // npm_* variables from an enclosing `npm test` would leak config (workspace filters…) into npm ci.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)));
  let output = '';
  for (const mode of ['--offline', '--prefer-offline']) {
    const result = spawnSync('npm', ['ci', ...args, mode], { cwd, env, encoding: 'utf8', timeout: 150_000 });
    output += `$ npm ci ${[...args, mode].join(' ')}\n${result.stdout}${result.stderr}`;
    if (result.status === 0) return { mode, output };
    if (!/ENOTCACHED/.test(result.stderr)) break;
  }
  assert.fail(`npm ci failed in the staged tree:\n${output}`);
}

let stagingRoot = '';
const services: RunningService[] = [];

before(() => {
  stagingRoot = mkdtempSync(join(tmpdir(), 'herald-production-'));
});

after(async () => {
  await Promise.all(services.map((service) => service.stop()));
  if (stagingRoot) rmSync(stagingRoot, { recursive: true, force: true });
});

test('the Dockerfile production stage installs runtime dependencies of the two services only', () => {
  const args = productionNpmCiArguments();
  assert.ok(args.includes('--omit=dev'), `npm ci ${args.join(' ')}`);
  assert.ok(args.includes('--workspace=@herald/hub') && args.includes('--workspace=@herald/broker'));
  assert.match(dockerfile, /^FROM \$\{NODE_IMAGE\} AS production$/m);
  // The LTS line CI also runs every test on (scripts/lts-node.sh).
  assert.match(dockerfile, /^ARG NODE_IMAGE=node:26-slim$/m);
  assert.match(dockerfile, /^COPY --from=build \/out\/ \.\/$/m);
  assert.match(dockerfile, /^USER 10001:10001$/m, "numeric non-root user, matching the chart's runAsUser");
  assert.match(dockerfile, /^CMD \["node", "services\/hub\/dist\/main\.js"\]$/m);
});

test('production tree: npm ci --omit=dev, then hub and broker answer /healthz without Redis', {
  timeout: 240_000,
}, async (t) => {
  for (const service of ['hub', 'broker'] as const) {
    const script = entryPoint(repoRoot, service);
    assert.ok(
      existsSync(script),
      `${relative(repoRoot, script)} does not exist: build the services first (npm run build)`,
    );
  }
  stageProductionTree(stagingRoot);
  const staged = filesUnder(stagingRoot, (path) => path.endsWith('node_modules'));
  const sources = staged.filter(
    (path) => path.endsWith('.ts') && !path.endsWith('.d.ts') && !path.endsWith('.d.mts'),
  );
  assert.deepEqual(sources, [], 'only compiled output is staged');
  assert.ok(staged.some((path) => path.endsWith(join('services', 'hub', 'dist', 'main.js'))));
  for (const folder of workspaceFolders()) {
    if (existsSync(join(repoRoot, folder, 'lua'))) {
      assert.ok(
        existsSync(join(stagingRoot, folder, 'lua')),
        `${folder}/lua (Lua scripts) must ship with dist/`,
      );
    }
  }

  const { mode, output } = npmCi(stagingRoot, productionNpmCiArguments());
  t.diagnostic(`npm ci ran with ${mode}`);
  const modules = join(stagingRoot, 'node_modules');
  const rootManifest = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
    devDependencies?: Record<string, string>;
  };
  const mustBeAbsent = [
    ...Object.keys(rootManifest.devDependencies ?? {}),
    'playwright-core',
    'kubernetes-models',
  ];
  for (const name of mustBeAbsent) {
    assert.equal(existsSync(join(modules, name)), false, `${name} was installed (${mode}):\n${output}`);
  }
  for (const name of ['@herald/hub', '@herald/broker', 'fastify', 'ioredis']) {
    assert.ok(existsSync(join(modules, name)), `${name} missing from the production install`);
  }

  // No REDIS_URL: the in-process backend.
  services.push(
    await startService({
      root: stagingRoot,
      service: 'hub',
      env: { NODE_ENV: 'production', ...hubTestEnvironment },
    }),
  );
  services.push(
    await startService({ root: stagingRoot, service: 'broker', env: { NODE_ENV: 'production' } }),
  );
  for (const service of services) {
    const response = await fetch(`${service.baseUrl}/healthz`);
    await response.arrayBuffer();
    assert.equal(response.status, 200, `${service.name} /healthz from the production tree`);
  }
});
