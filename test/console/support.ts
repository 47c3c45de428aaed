/*
 * What the console's browser tests share: a broker on Redis with JWT on (the console's static
 * files from services/console/dist), tokens per role, real data pushed through the API, and a
 * headless Chromium (test/chromium.ts).
 */
import { type Broker, brokerSpec, startBroker } from '@herald/broker';
import { parseEnv } from '@herald/config';
import { testRedisUrl, uniquePrefix } from '@herald/testkit';
import { SignJWT } from 'jose';

export { launchChromium } from '../chromium.js';

import type { Locator, Page } from 'playwright-core';

export const SECRET = 'console-test-secret-of-at-least-32-bytes!';

/** `environment` adds to or overrides the broker's variables (e.g. BROKER_HUB_URL). */
export async function startConsoleBroker(environment: Record<string, string> = {}): Promise<Broker> {
  return startBroker(
    parseEnv(brokerSpec, {
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      REDIS_URL: await testRedisUrl(),
      BROKER_KEY_PREFIX: uniquePrefix('console'),
      BROKER_STATS_INTERVAL: '500',
      JWT_ENABLED: 'true',
      JWT_ALGORITHM: 'HS256',
      JWT_SECRET: SECRET,
      ...environment,
    }),
    { fastify: { logger: false } },
  );
}

/** A token with one of the broker's default role names. */
export function token(role: 'admin' | 'read-write' | 'read-only'): Promise<string> {
  return new SignJWT({ role })
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(`console-${role}`)
    .setExpirationTime('30m')
    .sign(new TextEncoder().encode(SECRET));
}

export type Api = <T = any>(
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; body: T }>;

/** Calls the broker as an admin would, outside the browser (to set up and to check). */
export async function adminApi(broker: Broker): Promise<Api> {
  const bearer = await token('admin');
  return async (method, path, body) => {
    const response = await fetch(broker.url + path, {
      method,
      headers: {
        authorization: `Bearer ${bearer}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  };
}

/** Opens the console and signs in with `bearer` through the token form. */
export async function signIn(page: Page, broker: Broker, bearer: string, hash = '#/overview'): Promise<void> {
  await page.goto(`${broker.url}/console/${hash}`);
  await page.locator('textarea[name=token]').fill(bearer);
  await page.getByRole('button', { name: 'Use this token' }).click();
}

/** Waits until the locator's text matches (Playwright auto-waits; no sleep). */
export async function waitForText(locator: Locator, text: RegExp | string): Promise<void> {
  await locator.filter({ hasText: text }).first().waitFor({ timeout: 15_000 });
}
