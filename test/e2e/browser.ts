/**
 * Owns driving Debian's Chromium for the dashboard e2e test and the observability benchmark: where the
 * browser is, the flags it runs headless with, and loading a page so that a load Chromium itself
 * abandoned is tried again.
 */
import { chromium, type Browser, type Page } from 'playwright-core';

/** Debian's package `chromium` (scripts/setup.sh --for-tests installs it). */
export const CHROMIUM = '/usr/bin/chromium';
/** Headless, and no background traffic: the browser talks only to the cluster under test. */
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/**
 * Navigates, retrying a load Chromium aborted with ERR_NETWORK_CHANGED: Chromium cancels requests in
 * flight whenever the host's interfaces change, and the cluster under test adds and removes pod veths
 * and Docker networks as it runs. In the fresh-machine container the first load of a new browser failed
 * so in two runs of three. The dashboard's own API requests retry such errors themselves
 * (dashboard/src/api.ts); only document loads need it here. Chromium then navigates to its error page,
 * which interrupts a load started at once, so each retry waits for that page first.
 */
export async function openPage(page: Page, url: string): Promise<void> {
  const attempts = 5;
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url);
      return;
    } catch (err) {
      const text = String(err);
      const abortedByNetworkChange = text.includes('ERR_NETWORK_CHANGED') || text.includes('interrupted by another navigation to "chrome-error://');
      if (attempt >= attempts || !abortedByNetworkChange) throw err;
      console.error(`page load of ${url} aborted by a network change (attempt ${attempt} of ${attempts}); loading it again`);
      await page.waitForLoadState('load').catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}
