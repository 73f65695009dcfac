// pano-explorer in a real browser (Debian's Chromium, headless, driven by
// puppeteer-core): what a person would see, asserted.
//
//   node explorer.mjs URL UUID SHOTS_DIR
//
// Environment: NEW_JOB (a shell command that starts a job of the workflow
// once the workflow page is open), NEW_JOB_ID (its DAG job id), EARLY_WF (a
// workflow with no event yet), EARLY_JOB and EARLY_JOB_ID (a command that
// runs a job of it, and that job's id), BIG_WF (a workflow of 1,200 jobs
// big_ID0000..1199, started a second apart in that order, the first 1,000
// ended after 0.5 s, the last 200 running with a sampling interval of 10
// minutes: nothing changes in it while the test runs), ES (the
// Elasticsearch URL) and INDICES (the index pattern), or STORE (the
// embedded store pano-explorer reads), HOSTILE (the argv
// element that must show as text), HOSTILE_JOB, FAILED_JOB (exit 3).
// Prints one line per check; exits 1 at the first failure.
import {execFile} from 'node:child_process';
import {launch, newPage} from './chromium.mjs';
import {searchable} from './store.mjs';

const [url, uuid, shots] = process.argv.slice(2);
const env = process.env;
let browser;

function fail(message) {
  console.error('FAIL: ' + message);
  if (browser) browser.close().catch(() => {});
  process.exit(1);
}
function ok(message) { console.log('ok: ' + message); }
const sleep = ms => new Promise(r => setTimeout(r, ms));


browser = await launch();
const page = await newPage(browser);
const problems = [];
page.on('pageerror', e => problems.push('page error: ' + e.message));
page.on('console', m => { if (m.type() === 'error') problems.push('console: ' + m.text()); });
page.on('dialog', d => { problems.push('a dialog opened: ' + d.message()); d.dismiss(); });

// ---- workflows: this one is listed, running
await page.goto(`${url}/#/`, {waitUntil: 'networkidle0'});
await page.waitForSelector(`a[href="#/wf/${uuid}"]`, {timeout: 15000})
  .catch(() => fail('the workflow is not in the workflows list'));
ok('the workflows page lists the workflow');
await page.screenshot({path: `${shots}/workflows.png`, fullPage: true});

// ---- the workflow page: jobs with their exit codes, a timeline, charts drawn from data
await page.goto(`${url}/#/wf/${uuid}`, {waitUntil: 'networkidle0'});
await page.waitForFunction(f => [...document.querySelectorAll('td a')].some(a => a.textContent === f),
  {timeout: 20000}, env.FAILED_JOB).catch(() => fail('the failed job is not listed'));
const rows = await page.$$eval('h2 + .table-wrap tbody tr, .table-wrap tbody tr', trs => trs.map(tr =>
  [...tr.querySelectorAll('td')].map(td => td.textContent)));
const failedRow = rows.find(r => r[0] === env.FAILED_JOB);
if (!failedRow || failedRow[1] !== 'failed' || failedRow[2] !== '3')
  fail(`the failed job's row reads ${JSON.stringify(failedRow)}, not failed with exit 3`);
ok(`${env.FAILED_JOB} is shown failed with exit code 3`);
await page.waitForFunction(() => {
  if (typeof Chart === 'undefined') return false;
  const c = Chart.getChart(document.querySelector('canvas[data-metric="cpu"]'));
  return c && c.data.datasets[0].data.some(p => p.y > 0);
}, {timeout: 15000}).catch(() => fail('the CPU chart was not drawn from data'));
const drawn = await page.evaluate(() => ['cpu', 'rss', 'read', 'write'].map(m => {
  const c = Chart.getChart(document.querySelector(`canvas[data-metric="${m}"]`));
  return [m, c ? c.data.datasets[0].data.length : 0, c ? Math.max(...c.data.datasets[0].data.map(p => p.y)) : 0];
}));
for (const [m, n, max] of drawn)
  if (n === 0 || !(max > 0)) fail(`the ${m} chart has ${n} points, largest ${max}`);
ok('CPU, memory, read and write charts are drawn from data: ' + drawn.map(d => `${d[0]} ${d[1]} points`).join(', '));
// the memory chart: the mean, and its peak drawn as a second line, at or above the mean
const peak = await page.evaluate(() => {
  const c = Chart.getChart(document.querySelector('canvas[data-metric="rss"]'));
  if (!c || c.data.datasets.length !== 2) return {error: `${c ? c.data.datasets.length : 0} datasets`};
  const [mean, peak] = c.data.datasets, meta = c.getDatasetMeta(1);
  return {label: peak.label, visible: c.isDatasetVisible(1), n: peak.data.length, means: mean.data.length,
          max: Math.max(...peak.data.map(p => p.y)),
          below: peak.data.filter((p, i) => p.y < mean.data[i].y - 1e-9).length,
          drawn: meta.data.filter(e => Number.isFinite(e.x) && Number.isFinite(e.y)).length,
          inside: meta.data.filter(e => e.y >= c.chartArea.top - 1 && e.y <= c.chartArea.bottom + 1).length};
});
if (peak.error || peak.label !== 'peak' || !peak.visible || peak.n === 0 || peak.n !== peak.means ||
    !(peak.max > 0) || peak.below > 0 || peak.drawn !== peak.n || peak.inside !== peak.n)
  fail(`the memory chart's peak: ${JSON.stringify(peak)}`);
ok(`the memory chart draws its peak: ${peak.n} points, up to ${peak.max.toFixed(1)} MiB, none under the mean`);
const gantt = await page.evaluate(() => {
  const c = document.getElementById('gantt');
  return c && c.width > 0 && c.height > 40;
});
if (!gantt) fail('no timeline');
ok('the timeline is drawn');
await page.screenshot({path: `${shots}/workflow.png`, fullPage: true});

// ---- live: a job started now appears without a reload, shown by the first
// refresh asked for after it became searchable. The delay is reported, not
// asserted: it is one refresh period plus one refresh under whatever load
// the machine has (bench/explorer.sh measures it on a quiet machine).
const reloads = await page.evaluate(() => performance.getEntriesByType('navigation').length);
execFile('sh', ['-c', env.NEW_JOB], () => {});
let seenAt = 0;
for (let i = 0; i < 300 && !seenAt; i++) {
  // a run is listed from its kickstart.inv.start (its samples live in another
  // index, which may refresh first)
  if (await searchable({wf_uuid: uuid, dag_job_id: env.NEW_JOB_ID, event: 'kickstart.inv.start'}))
    seenAt = Date.now();
  else await sleep(50);
}
if (!seenAt) fail(`${env.NEW_JOB_ID}'s events never became searchable`);
// pano-indexer writes a run's summary (which the rows are read from) after
// its events: the claim holds from when pano-query lists the job
const listedByQuery = () => new Promise(resolve => execFile(env.QUERY, ['jobs', uuid, '--json'],
  (err, out) => resolve(!err && JSON.parse(out).jobs.some(j => j.id === env.NEW_JOB_ID))));
const eventsAt = seenAt;
for (seenAt = 0; !seenAt && Date.now() < eventsAt + 10000; await sleep(50))
  if (await listedByQuery()) seenAt = Date.now();
if (!seenAt) fail(`pano-query did not list ${env.NEW_JOB_ID} within 10 s of its events being searchable`);
ok(`pano-query lists ${env.NEW_JOB_ID} ${seenAt - eventsAt} ms after its start is searchable`);
// Each poll reads, at one instant, when the shown data was asked for and
// whether the job is in it.
const shown = () => page.evaluate(id => ({
  askedAt: Number(document.getElementById('live').dataset.askedAt || 0),
  listed: [...document.querySelectorAll('td a')].some(a => a.textContent === id),
}), env.NEW_JOB_ID);
for (const deadline = Date.now() + 10000; ; await sleep(50)) {
  const now = await shown();
  if (now.listed) break;
  if (now.askedAt > seenAt)
    fail(`data asked for ${now.askedAt - seenAt} ms after ${env.NEW_JOB_ID} became searchable does not list it`);
  if (Date.now() > deadline) fail('the new job did not appear within 10 s (the page did not refresh)');
}
const delay = (Date.now() - seenAt) / 1000;
if (await page.evaluate(() => performance.getEntriesByType('navigation').length) !== reloads)
  fail('the page was reloaded');
ok(`a job started after the page opened appeared ${delay.toFixed(2)} s after it became searchable, without a reload`);
// The jobs table keeps the rows that did not change: the new job's row must
// still follow it to its end, once, and the rows already there stay.
const rowsOf = id => page.evaluate(id => [...document.querySelectorAll('tbody tr')]
  .filter(tr => tr.querySelector('td a')?.textContent === id)
  .map(tr => [...tr.children].map(td => td.textContent))
  .filter(cells => cells.length === 11), id);  // the jobs table's rows (the anomalies' have 5)
await page.waitForFunction(id => [...document.querySelectorAll('tbody tr')].some(tr =>
  tr.querySelector('td a')?.textContent === id && tr.children[1].textContent === 'succeeded'),
  {timeout: 15000, polling: 100}, env.NEW_JOB_ID)
  .catch(async () => fail(`${env.NEW_JOB_ID}'s row did not turn succeeded: ${JSON.stringify(await rowsOf(env.NEW_JOB_ID))}`));
for (const id of [env.NEW_JOB_ID, env.FAILED_JOB]) {
  const rows = await rowsOf(id);
  if (rows.length !== 1) fail(`${id} has ${rows.length} rows in the jobs table`);
}
const [failedNow] = await rowsOf(env.FAILED_JOB);
if (failedNow[1] !== 'failed' || failedNow[2] !== '3') fail(`${env.FAILED_JOB}'s row now reads ${failedNow}`);
ok(`the new job's row turned succeeded, each job has one row, ${env.FAILED_JOB} still reads failed, exit 3`);

// ---- a workflow of 1,200 jobs, in a tab of its own whose answers are
// counted: the first paint gets counts, the charts, the timeline's overview
// and one page of the jobs table, never a row per job for all of them
const big = await newPage(browser);
big.on('pageerror', e => problems.push('page error: ' + e.message));
const answers = [];  // {path, at, bytes, unchanged, keys}
big.on('response', async r => {
  const path = r.url().slice(url.length);
  if (!path.startsWith('/api/')) return;
  const body = await r.buffer().catch(() => Buffer.alloc(0));
  let json = null;
  try { json = JSON.parse(body.toString()); } catch (e) { /* counted as bytes only */ }
  answers.push({path, at: Date.now(), bytes: body.length, unchanged: json?.unchanged === true,
                keys: json && !Array.isArray(json) ? Object.keys(json) : []});
});
const loadedAt = Date.now();
await big.goto(`${url}/#/wf/${env.BIG_WF}`);
// the jobs table's rows have 11 cells (the anomalies table's 5)
const jobRows = () => [...document.querySelectorAll('tbody tr')].filter(tr => tr.children.length === 11);
const jobIds = () => big.evaluate(`(${jobRows})().map(tr => tr.children[0].textContent)`);
const jobCount = () => big.evaluate(() => document.querySelector('input[type=search] + span').textContent);
await big.waitForFunction(`(${jobRows})().length >= 500`, {timeout: 20000})
  .catch(() => fail('the big workflow\'s jobs are not listed'));
for (const deadline = Date.now() + 5000; answers.length < 2 && Date.now() < deadline;) await sleep(50);
const firstPaint = answers.filter(a => !a.path.includes('since='));
const wfAnswer = firstPaint.find(a => a.path.startsWith(`/api/workflows/${env.BIG_WF}?`));
const pageAnswer = firstPaint.find(a => a.path.startsWith(`/api/workflows/${env.BIG_WF}/jobs?`));
const received = firstPaint.reduce((sum, a) => sum + a.bytes, 0);
if (!wfAnswer || wfAnswer.keys.includes('jobs') || !wfAnswer.keys.includes('overview') || wfAnswer.bytes > 65536)
  fail(`the workflow's answer: ${JSON.stringify(wfAnswer)}`);
if (!pageAnswer || !/offset=0&limit=500$/.test(pageAnswer.path) || firstPaint.length !== 2)
  fail(`the first paint asked ${JSON.stringify(firstPaint.map(a => a.path))}`);
ok(`the first paint of 1,200 jobs received ${received} bytes of answers: the workflow ${wfAnswer.bytes} ` +
   `(no row per job), the first page of 500 jobs ${pageAnswer.bytes}`);

// nothing changes in it (its 200 running jobs sample every 10 min): the page
// asks again with its cursor, gets "unchanged", asks nothing more, and after
// two such answers waits twice as long each time (1, 1, 1, 2, 4, 8 s): 5
// refreshes in 13 s, not 12
await sleep(loadedAt + 13000 - Date.now());
const refreshes = answers.filter(a => a.at <= loadedAt + 13000 && a.path.includes('since='));
const others = answers.filter(a => a.at <= loadedAt + 13000 && !firstPaint.includes(a) && !a.path.includes('since='));
const gaps = refreshes.map((a, k) => (a.at - (k ? refreshes[k - 1].at : wfAnswer.at)) / 1000);
if (refreshes.length < 4 || refreshes.length > 6 || !refreshes.every(a => a.unchanged && a.bytes < 100) || others.length ||
    gaps.some((g, k) => k && g < gaps[k - 1] * 0.8) || gaps[gaps.length - 1] < 3)
  fail(`in 13 s the idle page asked ${JSON.stringify(refreshes.map(a => [a.path.slice(-60), a.bytes, a.unchanged]))}, ` +
       `${others.length} more, gaps ${gaps}`);
ok(`the idle page refreshed ${refreshes.length} times in 13 s, ${gaps.map(g => g.toFixed(1)).join(', ')} s apart, ` +
   `each answered "unchanged" in ${Math.max(...refreshes.map(a => a.bytes))} bytes at most`);

// the table lists the newest 500 (laying out thousands of rows froze the
// page for seconds), asks for 500 more at a click, and the server filters
let ids = await jobIds();
if (ids.length !== 500 || ids[0] !== 'big_ID1199' || ids[499] !== 'big_ID0700')
  fail(`the big workflow lists ${ids.length} jobs, from ${ids[0]} to ${ids[ids.length - 1]}, not the newest 500`);
if (await jobCount() !== '1200 jobs, the first 500 shown') fail(`the table says "${await jobCount()}"`);
ok('a workflow of 1,200 jobs lists the newest 500 first and says so');
const asked = () => answers.map(a => a.path).filter(p => p.startsWith(`/api/workflows/${env.BIG_WF}/jobs?`));
const more = await big.evaluateHandle(() => [...document.querySelectorAll('button')].find(b => b.textContent === 'show 500 more'));
await more.click();
await big.waitForFunction(`(${jobRows})().length >= 1000`, {timeout: 10000})
  .catch(() => fail('"show 500 more" did not list more jobs'));
ids = await jobIds();
if (ids.length !== 1000 || ids[999] !== 'big_ID0200') fail(`after "show 500 more": ${ids.length} jobs, the last ${ids[ids.length - 1]}`);
if (!asked().some(p => p.endsWith('offset=500&limit=500'))) fail(`"show 500 more" asked ${JSON.stringify(asked())}`);
await big.type('input[type=search]', 'id007');
await big.waitForFunction(`(${jobRows})().length < 100`, {timeout: 5000})
  .catch(() => fail('the filter did not narrow the jobs'));
ids = await jobIds();
const want = Array.from({length: 10}, (_, i) => `big_ID00${79 - i}`);
if (JSON.stringify(ids) !== JSON.stringify(want)) fail(`the filter "id007" lists ${JSON.stringify(ids)}`);
if (await jobCount() !== '10 of 1200 jobs match') fail(`with the filter, the table says "${await jobCount()}"`);
if (!(await more.evaluate(b => b.hidden))) fail('"show 500 more" is offered for 10 jobs');
const filtered = asked().filter(p => p.includes('&q='));
if (filtered.length !== 1 || !filtered[0].endsWith('offset=0&limit=500&q=id007'))
  fail(`typing "id007" asked ${JSON.stringify(filtered)}, not once after the last key`);
ok('"show 500 more" asks for the next 500 and lists 1,000, the filter "id007" asks once and lists the 10 jobs it names');
await big.screenshot({path: `${shots}/workflow-big.png`});

// ---- its timeline: too many jobs for a bar each, it draws how many ran at
// once, by state; a drag across it zooms into that time, whose few jobs come
// as bars; "reset zoom" goes back
const note = () => big.$eval('.legend .note', n => n.textContent);
const ganttHeight = () => big.$eval('#gantt', c => parseFloat(c.style.height));
if (!/^1200 jobs: how many ran at once, by state/.test(await note()) || await ganttHeight() !== 244)
  fail(`the big workflow's timeline is ${await ganttHeight()} px tall and says "${await note()}"`);
await big.$eval('#gantt', c => c.scrollIntoView());
let box = await (await big.$('#gantt')).boundingBox();
const tip = async (x, y) => {
  await big.mouse.move(box.x + x, box.y + y);
  return big.evaluate(() => { const t = document.getElementById('tooltip'); return t.hidden ? '' : t.textContent; });
};
const start = await tip(50, 210), end = await tip(box.width - 12, 210);
if (!/\nsucceeded [12]$/.test(start)) fail(`the timeline's start shows "${start}", not a job or two succeeded`);
if (!/\nrunning 200$/.test(end)) fail(`the timeline's end shows "${end}", not the 200 running`);
ok(`the timeline of 1,200 jobs draws how many ran at once (${await ganttHeight()} px): ` +
   `${JSON.stringify(start)} at its start, ${JSON.stringify(end)} at its end`);
const drag = async (from, to) => {
  await big.mouse.move(box.x + from, box.y + 100);
  await big.mouse.down();
  await big.mouse.move(box.x + to, box.y + 100, {steps: 5});
  await big.mouse.up();
};
const timelineAsks = () => answers.filter(a => a.path.includes('/timeline?')).length;
await drag(50, 50 + (box.width - 58) * 0.05);
await big.waitForFunction(() => /^\d+ jobs from/.test(document.querySelector('.legend .note').textContent), {timeout: 10000})
  .catch(async () => fail(`a drag across the timeline's start did not zoom: "${await note()}"`));
const zoomed = Number((await note()).split(' ')[0]);
const firstRow = await tip(box.width / 2, 8);
await big.$eval('.gantt-wrap', w => { w.scrollTop = w.scrollHeight; });  // its last row
box = await (await big.$('#gantt')).boundingBox();
const lastRow = await tip(box.width / 2, zoomed * 16 - 8);
if (!(zoomed >= 20 && zoomed <= 150) || await ganttHeight() !== zoomed * 16 + 24 || timelineAsks() !== 1 ||
    !/^big_ID0\d{3}\nsucceeded/.test(firstRow) || !/^big_ID0\d{3}\nsucceeded/.test(lastRow))
  fail(`zoomed in: "${await note()}", ${await ganttHeight()} px, ${timelineAsks()} asked, rows "${firstRow}" … "${lastRow}"`);
await (await big.$('.gantt-wrap')).screenshot({path: `${shots}/timeline-zoomed.png`});
const reset = await big.evaluateHandle(() => [...document.querySelectorAll('button')].find(b => b.textContent === 'reset zoom'));
await reset.click();
if (!/^1200 jobs: how many/.test(await note()) || !(await reset.evaluate(b => b.hidden)))
  fail(`after "reset zoom" the timeline says "${await note()}"`);
box = await (await big.$('#gantt')).boundingBox();
await drag(box.width - 12 - (box.width - 58) * 0.03, box.width - 12);
await big.waitForFunction(() => /^\d+ jobs from/.test(document.querySelector('.legend .note').textContent), {timeout: 10000})
  .catch(async () => fail(`a drag across the timeline's end did not zoom: "${await note()}"`));
const running = await tip(box.width / 2, 8);
if (!/^big_ID1\d{3}\nrunning/.test(running)) fail(`zoomed into the end, the first row shows "${running}"`);
ok(`a drag zooms into ${zoomed} jobs as bars (${JSON.stringify(firstRow.split('\n')[0])} to ` +
   `${JSON.stringify(lastRow.split('\n')[0])}), "reset zoom" goes back, the end's bars are the running jobs`);
await big.close();

// ---- a job with a hostile argument: shown as text, nothing of it executed
await page.goto(`${url}/#/wf/${uuid}/job/${encodeURIComponent(env.HOSTILE_JOB)}`, {waitUntil: 'networkidle0'});
await page.waitForSelector('[data-field="Arguments"]', {timeout: 15000})
  .catch(() => fail('the job page did not show its arguments'));
await page.waitForFunction(() => document.querySelector('[data-field="Arguments"]').textContent !== '–',
  {timeout: 10000}).catch(() => fail('no arguments shown'));
const args = await page.$eval('[data-field="Arguments"]', n => n.textContent);
if (!args.includes(env.HOSTILE)) fail(`the arguments read ${JSON.stringify(args)}`);
if (await page.$$eval('img', imgs => imgs.length) !== 0) fail('an <img> from the argument is in the page');
ok(`the hostile argument shows as text: ${JSON.stringify(args)}`);
await page.waitForFunction(() => {
  const c = Chart.getChart(document.querySelector('canvas[data-metric="cpu"]'));
  return c && c.data.datasets[0].data.length > 0;
}, {timeout: 15000}).catch(() => fail("the job's CPU chart was not drawn"));
ok("the job page draws the job's own charts");
await page.waitForFunction(() => {
  const c = Chart.getChart(document.querySelector('canvas[data-custom="progress"]'));
  return c && c.data.datasets[0].data.map(p => p.y).join() === '1,2.5';
}, {timeout: 15000}).catch(() => fail("the job's custom metric 'progress' (1, then 2.5) was not charted"));
ok("the job page charts its custom metric, each value as sent");
// a sub-second job: its time axis has ticks finer than a second, each
// labelled apart from the others
const ticks = await page.evaluate(() =>
  Chart.getChart(document.querySelector('canvas[data-metric="cpu"]')).scales.x.ticks.map(t => t.label));
if (ticks.length < 2 || new Set(ticks).size !== ticks.length)
  fail(`the job's time axis reads ${JSON.stringify(ticks)}`);
ok(`the sub-second job's time axis: ${ticks.join(', ')}`);
await page.screenshot({path: `${shots}/job.png`, fullPage: true});

// ---- the failed job's page
await page.goto(`${url}/#/wf/${uuid}/job/${encodeURIComponent(env.FAILED_JOB)}`, {waitUntil: 'networkidle0'});
await page.waitForFunction(() => document.querySelector('[data-field="Exit code"]')?.textContent === '3',
  {timeout: 15000}).catch(() => fail('the failed job page does not show exit code 3'));
ok('the failed job page shows exit code 3');

if (problems.length) fail(problems.join('; '));
ok('no script error, no dialog');

// ---- a workflow's page opened before its first event is stored: it says so,
// then shows the workflow when its events come, without a reload (a tab of
// its own: the 404 it gets first is logged as a console error)
const early = await newPage(browser);
const earlyErrors = [];
early.on('pageerror', e => earlyErrors.push(e.message));
await early.goto(`${url}/#/wf/${env.EARLY_WF}`, {waitUntil: 'networkidle0'});
await early.waitForSelector('.error-box', {timeout: 15000})
  .catch(() => fail('a workflow with no event yet shows no error'));
ok(`a workflow with no event yet: "${await early.$eval('.error-box', n => n.textContent)}"`);
execFile('sh', ['-c', env.EARLY_JOB], () => {});
await early.waitForFunction(id => [...document.querySelectorAll('td a')].some(a => a.textContent === id) &&
  !document.querySelector('.error-box') && document.querySelector('h1')?.offsetParent !== null,
  {timeout: 40000, polling: 100}, env.EARLY_JOB_ID)
  .catch(async () => fail(`its page did not show ${env.EARLY_JOB_ID}: ` +
    JSON.stringify(await early.evaluate(() => document.getElementById('main').innerText.slice(0, 300)))));
if (earlyErrors.length) fail(earlyErrors.join('; '));
ok(`then its job ${env.EARLY_JOB_ID}, and the error is gone, without a reload`);
await browser.close();
