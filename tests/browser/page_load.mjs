// How long pano-explorer's workflow page takes to draw, in a real browser
// (Debian's Chromium, headless, via puppeteer-core); used by
// bench/explorer.sh.
//
//   node page_load.mjs URL UUID LOADS
//
// Each load opens a fresh tab at URL/#/wf/UUID and waits until the first
// render is complete: the timeline drawn (its canvas sized for the jobs),
// the four charts drawn, the jobs table filled and the page showing
// "updated", and that frame laid out and painted (the page answers again).
// Prints one line per load: "page_ms N bytes B", B the bytes of the API's
// answers received until then.
import {launch, newPage} from './chromium.mjs';

const [url, uuid, loadsArg] = process.argv.slice(2);
const loads = Number(loadsArg || 5);
const browser = await launch();
try {
  for (let i = 0; i < loads; i++) {
    const page = await newPage(browser);
    const errors = [];
    page.on('pageerror', e => errors.push(e.message));
    let bytes = 0;
    page.on('response', async r => {
      if (r.url().includes('/api/')) bytes += (await r.buffer().catch(() => Buffer.alloc(0))).length;
    });
    const t0 = Date.now();
    await page.goto(`${url}/#/wf/${uuid}`);
    await page.waitForFunction(() => {
      const live = document.getElementById('live');
      const gantt = document.getElementById('gantt');
      const charts = [...document.querySelectorAll('.charts canvas')];
      return live && live.textContent.startsWith('updated') && gantt && gantt.height > 100 &&
        charts.length >= 4 && charts.every(c => Chart.getChart(c)) &&
        document.querySelectorAll('.table-wrap tbody tr').length > 0;
    }, {timeout: 60000, polling: 'raf'});
    // and laid out and painted: a frame after the one that drew it (the
    // check above runs before the browser lays the page out)
    await page.evaluate(() => new Promise(r => requestAnimationFrame(() => setTimeout(r))));
    const ms = Date.now() - t0;
    await new Promise(r => setTimeout(r, 200));  // the answers' bodies counted
    if (errors.length) throw new Error('page errors: ' + errors.join('; '));
    console.log(`page_ms ${ms} bytes ${bytes}`);
    await page.close();
  }
} finally {
  await browser.close();
}
