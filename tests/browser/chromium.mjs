// Debian's Chromium, headless, driven by puppeteer-core: the one way the
// browser tests and benchmarks start it.
import puppeteer from 'puppeteer-core';

export function launch() {
  return puppeteer.launch({
    executablePath: '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
           '--disable-background-networking', '--disable-component-update', '--disable-sync',
           '--disable-quic'],
  });
}

// A new tab the size of a desktop screen.
export async function newPage(browser) {
  const page = await browser.newPage();
  await page.setViewport({width: 1400, height: 1000});
  return page;
}
