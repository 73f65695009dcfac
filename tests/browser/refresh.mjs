// What pano-explorer's open workflow page asks while the workflow runs, in
// a real browser (Debian's Chromium, headless, via puppeteer-core); used by
// bench/explorer.sh.
//
//   node refresh.mjs URL UUID SECONDS [TIMEOUT_S]
//
// Opens URL/#/wf/UUID, waits (at most TIMEOUT_S seconds, 60) until it is
// drawn (workflow_page.mjs), then watches it for SECONDS: every API request
// the page makes on its own and completes in that time. Prints one line per
// request, "refresh_ms N bytes B" (from sent to its last byte; what it
// received, headers included), then "refreshes N"; or "refresh timeout"
// when the page was not drawn in time.
import {launch, newPage} from './chromium.mjs';
import {drawWorkflowPage, watchNetwork} from './workflow_page.mjs';

const [url, uuid, secondsArg, timeoutArg] = process.argv.slice(2);
const seconds = Number(secondsArg || 10);
const timeoutMs = Number(timeoutArg || 60) * 1000;
const browser = await launch();
try {
  const page = await newPage(browser);
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  const net = await watchNetwork(page);
  if (await drawWorkflowPage(page, url, uuid, timeoutMs) === null) {
    console.log('refresh timeout');
  } else {
    const from = net.requests.length;
    await new Promise(r => setTimeout(r, seconds * 1000));
    const refreshes = net.requests.slice(from).filter(r => new URL(r.url).pathname.startsWith('/api/'));
    for (const r of refreshes) console.log(`refresh_ms ${r.ms} bytes ${r.bytes}`);
    console.log(`refreshes ${refreshes.length}`);
  }
  if (errors.length) throw new Error('page errors: ' + errors.join('; '));
} finally {
  await browser.close();
}
