/*
 * Headless Chromium for the browser tests: Debian's (never a downloaded one), with the flags
 * this machine needs (without the background-networking ones its closed network refuses
 * Chromium's own connections, many at a time).
 */
import { type Browser, chromium } from 'playwright-core';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
}
