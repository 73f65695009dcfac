// How long pano-explorer's workflow page takes to draw, in a real browser
// (Debian's Chromium, headless, via puppeteer-core), and what it received
// meanwhile; used by bench/explorer.sh.
//
//   node page_load.mjs URL UUID LOADS [TIMEOUT_S]
//
// Each load opens a fresh tab at URL/#/wf/UUID and waits, at most TIMEOUT_S
// seconds (60), until the first render is complete (workflow_page.mjs).
// Prints one line per load: "page_ms N bytes B" (B: the bytes the tab
// received, its files and API answers; the browser's cache keeps the chart
// library after the first load), or "page_ms timeout bytes B" and no more
// loads.
import {launch, newPage} from './chromium.mjs';
import {drawWorkflowPage, watchNetwork} from './workflow_page.mjs';

const [url, uuid, loadsArg, timeoutArg] = process.argv.slice(2);
const loads = Number(loadsArg || 5);
const timeoutMs = Number(timeoutArg || 60) * 1000;
const browser = await launch();
try {
  for (let i = 0; i < loads; i++) {
    const page = await newPage(browser);
    const errors = [];
    page.on('pageerror', e => errors.push(e.message));
    const net = await watchNetwork(page);
    const ms = await drawWorkflowPage(page, url, uuid, timeoutMs);
    if (errors.length) throw new Error('page errors: ' + errors.join('; '));
    console.log(`page_ms ${ms ?? 'timeout'} bytes ${net.bytes}`);
    await page.close();
    if (ms === null) break;
  }
} finally {
  await browser.close();
}
