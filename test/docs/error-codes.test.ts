/*
 * Every error code is defined in its package's errors.ts and listed in docs/contracts.md
 * ("Errors", issue #23 item 5, after fastify's lib/errors.js: one registry, documented). This
 * keeps both true: a code written anywhere else in a package's src, a code the page does not
 * list, and a listed code no package defines each fail here.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { AUTH_FAILURE_REASONS, AuthError } from '@herald/auth';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The areas of the code scheme, read from the check `HeraldError` runs (one list, not a copy). */
function errorAreas(): string[] {
  const source = readFileSync(join(root, 'shared/errors/src/herald-error.ts'), 'utf8');
  const areas = /const CODE = \/\^HERALD_\(([A-Z|]+)\)_/.exec(source)?.[1];
  assert.ok(areas, 'the CODE check of shared/errors/src/herald-error.ts was not found');
  return areas.split('|');
}

const AREAS = errorAreas();
/** A code as a whole string literal: `'HERALD_BROKER_QUEUE_FULL'`, never a template's `HERALD_BROKER_${…}`. */
const CODE_LITERAL = new RegExp(`['"\`](HERALD_(?:${AREAS.join('|')})_[A-Z][A-Z0-9_]*)['"\`]`, 'g');

/** The package whose errors.ts holds each area's codes. */
const PACKAGE_OF_AREA: Readonly<Record<string, string>> = {
  AUTH: 'shared/auth',
  BROKER: 'services/broker',
  CONFIG: 'shared/config',
  HTTP: 'shared/http',
  HUB: 'services/hub',
  REDIS: 'shared/redis',
};

/**
 * Packages whose codes live in another module for now, with the reason. shared/redis is being
 * reworked by other items of issue #23 at the same time; its one code stays in deadline.ts
 * until that work gives it an errors.ts (the last test fails once it has one).
 */
const ERRORS_MODULE_ELSEWHERE: Readonly<Record<string, string>> = {
  'shared/redis': 'src/deadline.ts',
};

function errorsModuleOf(pkg: string): string {
  return ERRORS_MODULE_ELSEWHERE[pkg] ?? 'src/errors.ts';
}

/** Every package with a src folder: services/* and shared/*. */
function packages(): string[] {
  return ['services', 'shared'].flatMap((folder) =>
    readdirSync(join(root, folder), { withFileTypes: true })
      .filter((entry) => entry.isDirectory() && existsSync(join(root, folder, entry.name, 'src')))
      .map((entry) => `${folder}/${entry.name}`)
      .sort(),
  );
}

/** The .ts files of a folder, recursively, as paths relative to the repo. */
function sourcesUnder(folder: string): string[] {
  return readdirSync(join(root, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = `${folder}/${entry.name}`;
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

function codeLiterals(text: string): string[] {
  return [...text.matchAll(CODE_LITERAL)].map((match) => match[1] as string);
}

/**
 * The codes a package's errors module defines: its code literals, and for shared/auth the codes
 * it derives from its reasons (`HERALD_AUTH_<REASON>`), read from the module itself.
 */
function definedCodes(pkg: string): Set<string> {
  const path = join(root, pkg, errorsModuleOf(pkg));
  const codes = new Set(existsSync(path) ? codeLiterals(readFileSync(path, 'utf8')) : []);
  if (pkg === 'shared/auth') for (const reason of AUTH_FAILURE_REASONS) codes.add(new AuthError(reason).code);
  return codes;
}

/** Each code's status where its errors module writes it beside the code (`'HERALD_…', 409`). */
function writtenStatuses(pkg: string): Map<string, string> {
  const path = join(root, pkg, errorsModuleOf(pkg));
  const statuses = new Map<string, string>();
  if (!existsSync(path)) return statuses;
  for (const match of readFileSync(path, 'utf8').matchAll(/['"](HERALD_[A-Z0-9_]+)['"],\s*(\d{3})\b/g))
    statuses.set(match[1] as string, match[2] as string);
  if (pkg === 'shared/auth')
    for (const reason of AUTH_FAILURE_REASONS) {
      const error = new AuthError(reason);
      statuses.set(error.code, String(error.statusCode));
    }
  return statuses;
}

interface ListedCode {
  readonly code: string;
  readonly status: string;
  readonly meaning: string;
}

/** The rows of the tables of docs/contracts.md's "Errors" section whose first cell is a code. */
function listedCodes(markdown: string): ListedCode[] {
  const start = markdown.indexOf('\n## Errors\n');
  assert.ok(start >= 0, 'docs/contracts.md has no "## Errors" section');
  const end = markdown.indexOf('\n## ', start + 1);
  const section = markdown.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^\| `(HERALD_[A-Z0-9_]+)` \|([^|\n]*)\|([^|\n]*)\|$/gm)].map((match) => ({
    code: match[1] as string,
    status: (match[2] as string).trim(),
    meaning: (match[3] as string).trim(),
  }));
}

const page = readFileSync(join(root, 'docs/contracts.md'), 'utf8');

test('a code written in a package is defined in its errors.ts', () => {
  const strays: string[] = [];
  for (const pkg of packages()) {
    const defined = definedCodes(pkg);
    for (const path of sourcesUnder(`${pkg}/src`)) {
      for (const code of codeLiterals(readFileSync(join(root, path), 'utf8'))) {
        if (!defined.has(code)) strays.push(`${code} in ${path}`);
      }
    }
  }
  assert.deepEqual(strays, [], `define these in their package's errors.ts:\n${strays.join('\n')}`);
});

test("a package's errors.ts defines only its own area's codes", () => {
  const misplaced: string[] = [];
  for (const pkg of packages()) {
    for (const code of definedCodes(pkg)) {
      const area = code.split('_')[1] as string;
      if (PACKAGE_OF_AREA[area] !== pkg)
        misplaced.push(`${code} in ${pkg} (area ${area}: ${PACKAGE_OF_AREA[area]})`);
    }
  }
  assert.deepEqual(misplaced, [], misplaced.join('\n'));
});

test('docs/contracts.md lists every defined code, and only those, once each', () => {
  const defined = new Set(packages().flatMap((pkg) => [...definedCodes(pkg)]));
  const listed = listedCodes(page).map((row) => row.code);
  const unlisted = [...defined].filter((code) => !listed.includes(code)).sort();
  const undefinedCodes = listed.filter((code) => !defined.has(code));
  const repeated = listed.filter((code, position) => listed.indexOf(code) !== position);
  assert.deepEqual(unlisted, [], `docs/contracts.md ("Errors") does not list: ${unlisted.join(', ')}`);
  assert.deepEqual(
    undefinedCodes,
    [],
    `docs/contracts.md lists codes no errors.ts defines: ${undefinedCodes.join(', ')}`,
  );
  assert.deepEqual(repeated, [], `listed more than once: ${repeated.join(', ')}`);
});

test('each listed code has a meaning, and the status its errors.ts gives it', () => {
  const statuses = new Map(packages().flatMap((pkg) => [...writtenStatuses(pkg)]));
  const wrong: string[] = [];
  for (const { code, status, meaning } of listedCodes(page)) {
    if (meaning === '') wrong.push(`${code}: no meaning`);
    const written = statuses.get(code);
    if (written !== undefined && written !== status)
      wrong.push(`${code}: listed ${status}, errors.ts says ${written}`);
  }
  assert.deepEqual(wrong, [], wrong.join('\n'));
});

test('the check itself: literals, templates and other HERALD_ names', () => {
  assert.deepEqual(codeLiterals(`new BrokerError('HERALD_BROKER_QUEUE_FULL', 429, "…")`), [
    'HERALD_BROKER_QUEUE_FULL',
  ]);
  assert.deepEqual(codeLiterals(`code: \`HERALD_BROKER_\${string}\`, \`HERALD_AUTH_\${reason}\``), []);
  assert.deepEqual(codeLiterals(`process.env['HERALD_TEST_TOPOLOGY']`), [], 'TEST is no error area');
  assert.deepEqual(
    listedCodes(
      '\n## Errors\n\n| Code | Status | Meaning |\n|---|---|---|\n| `HERALD_HUB_DRAINING` | 503 | a node that stops |\n\n## Next\n| `HERALD_HUB_X` | 1 | y |\n',
    ),
    [{ code: 'HERALD_HUB_DRAINING', status: '503', meaning: 'a node that stops' }],
  );
  assert.ok(definedCodes('services/broker').has('HERALD_BROKER_QUEUE_FULL'));
  assert.ok(definedCodes('shared/auth').has('HERALD_AUTH_EXPIRED'));
  for (const [pkg, module] of Object.entries(ERRORS_MODULE_ELSEWHERE)) {
    assert.ok(
      !existsSync(join(root, pkg, 'src/errors.ts')),
      `${pkg} has an errors.ts now: drop its entry in ERRORS_MODULE_ELSEWHERE`,
    );
    assert.ok(existsSync(join(root, pkg, module)), `${pkg}/${module} is gone`);
  }
});
