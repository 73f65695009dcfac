// pano-explorer's workflow page in a new tab, as the benchmarks time it:
// used by page_load.mjs and refresh.mjs.

// What the tab receives, as Chromium counts it (every response: the page's
// files and its API answers, headers included): the bytes so far, how many
// requests were sent so far, and each finished request with its number in
// the order sent and its time from being sent to its last byte.
export async function watchNetwork(page) {
  const cdp = await page.createCDPSession();
  await cdp.send('Network.enable');
  const pending = new Map();
  const net = {bytes: 0, sent: 0, requests: []};
  cdp.on('Network.requestWillBeSent', e =>
    pending.set(e.requestId, {url: e.request.url, sent: e.timestamp, n: net.sent++}));
  cdp.on('Network.loadingFailed', e => pending.delete(e.requestId));
  cdp.on('Network.loadingFinished', e => {
    net.bytes += e.encodedDataLength;
    const r = pending.get(e.requestId);
    if (!r) return;
    pending.delete(e.requestId);
    net.requests.push({url: r.url, n: r.n, sent: r.sent,
                       ms: Math.round((e.timestamp - r.sent) * 1000), bytes: e.encodedDataLength});
  });
  return net;
}

// Opens URL/#/wf/UUID in page and waits, at most timeoutMs, until its first
// render is complete: the timeline drawn (its canvas sized for the jobs),
// the four charts drawn, the jobs table filled and the page showing
// "updated", and that frame laid out and painted (the page answers again).
// Returns the milliseconds from navigation, or null when it took longer.
export async function drawWorkflowPage(page, url, uuid, timeoutMs) {
  const t0 = Date.now();
  await page.goto(`${url}/#/wf/${uuid}`);
  try {
    await page.waitForFunction(() => {
      const live = document.getElementById('live');
      const gantt = document.getElementById('gantt');
      const charts = [...document.querySelectorAll('.charts canvas')];
      return live && live.textContent.startsWith('updated') && gantt && gantt.height > 100 &&
        charts.length >= 4 && charts.every(c => Chart.getChart(c)) &&
        document.querySelectorAll('.table-wrap tbody tr').length > 0;
    }, {timeout: timeoutMs, polling: 'raf'});
  } catch (e) {
    if (e.name === 'TimeoutError') return null;
    throw e;
  }
  // and laid out and painted: a frame after the one that drew it (the
  // check above runs before the browser lays the page out)
  await page.evaluate(() => new Promise(r => requestAnimationFrame(() => setTimeout(r))));
  return Date.now() - t0;
}
