// What pano-explorer's open workflow page asks while the workflow runs, in
// a real browser (Debian's Chromium, headless, via puppeteer-core); used by
// bench/explorer.sh.
//
//   node refresh.mjs URL UUID COUNT [TIMEOUT_S]
//
// Opens URL/#/wf/UUID, waits (at most TIMEOUT_S seconds, 60) until it is
// drawn (workflow_page.mjs), then until the page has made COUNT more API
// requests of its own and had their answers (at most TIMEOUT_S seconds
// again). Prints one line per request, "refresh_ms N bytes B sent_ms T"
// (from sent to its last byte; what it received, headers included; when it
// was sent, after the first of them), or "refresh timeout" when the page
// was not drawn in time or had no answer in time.
import {launch, newPage} from './chromium.mjs';
import {drawWorkflowPage, watchNetwork} from './workflow_page.mjs';

const [url, uuid, countArg, timeoutArg] = process.argv.slice(2);
const count = Number(countArg || 5);
const timeoutMs = Number(timeoutArg || 60) * 1000;
const sleep = ms => new Promise(r => setTimeout(r, ms));
const browser = await launch();
try {
  const page = await newPage(browser);
  const errors = [];
  page.on('pageerror', e => errors.push(e.message));
  const net = await watchNetwork(page);
  const drawn = await drawWorkflowPage(page, url, uuid, timeoutMs);
  const from = net.sent; // what the page asks after its first draw
  const api = () => net.requests.filter(r => r.n >= from && new URL(r.url).pathname.startsWith('/api/'));
  if (drawn !== null)
    for (const deadline = Date.now() + timeoutMs; api().length < count && Date.now() < deadline;)
      await sleep(100);
  const refreshes = drawn === null ? [] : api();
  if (!refreshes.length) console.log('refresh timeout');
  const first = refreshes.length ? refreshes[0].sent : 0;
  for (const r of refreshes)
    console.log(`refresh_ms ${r.ms} bytes ${r.bytes} sent_ms ${Math.round((r.sent - first) * 1000)}`);
  if (errors.length) throw new Error('page errors: ' + errors.join('; '));
} finally {
  await browser.close();
}
