// Runs the helm binary fetched by scripts/fetch-helm.mjs against helm/herald and parses what it
// renders. Helm runs offline here: lint, template and values.schema.json checks only (no cluster).

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const chartDir = join(repoRoot, 'helm', 'herald');
export const ciValuesDir = join(chartDir, 'ci');
export const releaseName = 'herald-test';
export const releaseNamespace = 'messaging';

/** Every ci/*.yaml of the chart, by short name (`production` → ci/production-values.yaml). */
export const ciValues = {
  default: join(ciValuesDir, 'default-values.yaml'),
  production: join(ciValuesDir, 'production-values.yaml'),
  hubOnly: join(ciValuesDir, 'hub-only-values.yaml'),
  brokerOnly: join(ciValuesDir, 'broker-only-values.yaml'),
  existingSecret: join(ciValuesDir, 'existing-secret-values.yaml'),
  ingressHttpRoute: join(ciValuesDir, 'ingress-httproute-values.yaml'),
  tls: join(ciValuesDir, 'tls-values.yaml'),
  redisSentinel: join(ciValuesDir, 'redis-sentinel-values.yaml'),
  redisCluster: join(ciValuesDir, 'redis-cluster-values.yaml'),
} as const;

interface HelmSetup {
  readonly binary: string;
  readonly env: NodeJS.ProcessEnv;
}

let setup: HelmSetup | undefined;

/** Fetches helm once (cached in .helm/) and keeps helm's own state inside the project. */
export function helmSetup(): HelmSetup {
  if (setup) return setup;
  const output = execFileSync(process.execPath, [join(repoRoot, 'scripts', 'fetch-helm.mjs'), '--json'], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const parsed = JSON.parse(output) as { helm: string; env: Record<string, string> };
  if (!existsSync(parsed.helm))
    throw new Error(`fetch-helm.mjs reported ${parsed.helm}, which does not exist`);
  setup = { binary: parsed.helm, env: { ...process.env, ...parsed.env } };
  return setup;
}

export interface HelmResult {
  readonly status: number;
  readonly stdout: string;
  readonly stderr: string;
}

export function helm(args: readonly string[]): HelmResult {
  const { binary, env } = helmSetup();
  const result = spawnSync(binary, args, { cwd: repoRoot, env, encoding: 'utf8', timeout: 30_000 });
  if (result.error) throw result.error;
  return { status: result.status ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export interface ChartOptions {
  /** Values files, applied in order. */
  readonly valuesFiles?: readonly string[];
  /** `--set` entries (`path=value`). */
  readonly set?: readonly string[];
  /** `--set-string` entries. */
  readonly setString?: readonly string[];
}

function valuesArgs(options: ChartOptions): string[] {
  return [
    ...(options.valuesFiles ?? []).flatMap((file) => ['-f', file]),
    ...(options.set ?? []).flatMap((entry) => ['--set', entry]),
    ...(options.setString ?? []).flatMap((entry) => ['--set-string', entry]),
  ];
}

export function lintChart(options: ChartOptions = {}): HelmResult {
  return helm(['lint', '--strict', chartDir, ...valuesArgs(options)]);
}

export function templateChart(options: ChartOptions = {}): HelmResult {
  return helm(['template', releaseName, chartDir, '--namespace', releaseNamespace, ...valuesArgs(options)]);
}

/** A rendered Kubernetes object; fields are read through the narrow helpers below. */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  readonly spec?: any;
  readonly [field: string]: any;
}

export function parseManifests(text: string): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const document of parseAllDocuments(text)) {
    if (document.errors.length > 0) throw new Error(`invalid YAML rendered: ${document.errors[0]?.message}`);
    const value = document.toJS() as K8sObject | null;
    if (value === null) continue;
    objects.push(value);
  }
  return objects;
}

/** helm template, which must succeed, parsed into objects. */
export function render(options: ChartOptions = {}): K8sObject[] {
  const result = templateChart(options);
  if (result.status !== 0) throw new Error(`helm template failed (${result.status}):\n${result.stderr}`);
  return parseManifests(result.stdout);
}

export function componentName(component: 'hub' | 'broker'): string {
  return `${releaseName}-${component}`;
}

export function ofKind(objects: readonly K8sObject[], kind: string): K8sObject[] {
  return objects.filter((object) => object.kind === kind);
}

export function find(objects: readonly K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) {
    const present = objects.map((object) => `${object.kind}/${object.metadata.name}`).join(', ');
    throw new Error(`no ${kind}/${name} rendered; present: ${present}`);
  }
  return found;
}

export function componentOf(object: K8sObject): string | undefined {
  return object.metadata.labels?.['app.kubernetes.io/component'];
}

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string } };
}

export function containerOf(deployment: K8sObject) {
  const container = deployment.spec?.template?.spec?.containers?.[0];
  if (!container) throw new Error(`Deployment/${deployment.metadata.name} has no container`);
  return container;
}

export function envOf(deployment: K8sObject): Map<string, EnvVar> {
  const env = (containerOf(deployment).env ?? []) as EnvVar[];
  return new Map(env.map((variable) => [variable.name, variable]));
}
