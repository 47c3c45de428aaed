/*
 * docs/architecture.md names the files each request passes through (issue #11, item 7). This
 * keeps it true: every backticked path under services/ or shared/ must exist, so renaming or
 * deleting a file fails here until the page follows it.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const page = readFileSync(join(root, 'docs/architecture.md'), 'utf8');

/** Every `services/…` or `shared/…` code span of the page, once each, in order of appearance. */
function namedPaths(markdown: string): string[] {
  const spans = [...markdown.matchAll(/`((?:services|shared)\/[^`]*)`/g)].map((match) => match[1] as string);
  return [...new Set(spans)];
}

/** A path exists; a `*` in its last segment must match at least one entry of its folder. */
function exists(path: string): boolean {
  if (!path.includes('*')) return existsSync(join(root, path));
  const folder = dirname(path);
  if (folder.includes('*') || !existsSync(join(root, folder))) return false;
  const last = path.slice(folder.length + 1);
  const pattern = new RegExp(`^${last.split('*').map(escapeRegExp).join('[^/]*')}$`);
  return readdirSync(join(root, folder)).some((entry) => pattern.test(entry));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

test('every services/ and shared/ path named in docs/architecture.md exists', () => {
  const paths = namedPaths(page);
  const missing = paths.filter((path) => !exists(path));
  assert.deepEqual(missing, [], `docs/architecture.md names paths that do not exist: ${missing.join(', ')}`);
});

test('the page names files of both services and of the shared packages', () => {
  const paths = namedPaths(page);
  for (const area of ['services/hub/', 'services/broker/', 'shared/']) {
    assert.ok(
      paths.some((path) => path.startsWith(area)),
      `no path under ${area} found: is the page still written with backticked paths?`,
    );
  }
});

test('a path with spaces or a line reference is not a path: the page names bare paths only', () => {
  const odd = namedPaths(page).filter((path) => /[\s:#]/.test(path));
  assert.deepEqual(odd, [], `write these as bare paths (the check reads them whole): ${odd.join(', ')}`);
});

test('the check itself: a missing file and an unmatched glob are reported, existing ones are not', () => {
  assert.equal(exists('services/broker/lua/push-1.lua'), true);
  assert.equal(exists('services/broker/lua/*.lua'), true);
  assert.equal(exists('services/broker/lua/no-such-script.lua'), false);
  assert.equal(exists('services/broker/lua/*.nothing'), false);
  assert.deepEqual(namedPaths('see `services/a.ts`, `shared/b.ts`, `test/c.ts` and `services/a.ts`'), [
    'services/a.ts',
    'shared/b.ts',
  ]);
});
