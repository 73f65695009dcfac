// How long a job takes to appear on pano-explorer's open workflow page once
// it is searchable, in a real browser (Debian's Chromium, headless, via
// puppeteer-core); used by bench/explorer.sh.
//
//   node live_delay.mjs URL UUID JOBS
//
// Environment: ADD_JOB (a shell command run with a new DAG job id as $1,
// which publishes that job's start into the workflow), ES (the
// Elasticsearch URL), INDICES (the index pattern). Opens URL/#/wf/UUID,
// then JOBS times: adds a job, polls Elasticsearch every 20 ms until the
// job is searchable, and polls the page every 20 ms until it lists the job.
// Prints one line per job: "live_ms N".
import {execFileSync} from 'node:child_process';
import {launch, newPage} from './chromium.mjs';
import {searchable} from './store.mjs';

const [url, uuid, jobsArg] = process.argv.slice(2);
const env = process.env;
const sleep = ms => new Promise(r => setTimeout(r, ms));

async function until(what, test) {
  for (const deadline = Date.now() + 30000; !(await test()); await sleep(20))
    if (Date.now() > deadline) throw new Error(what + ' took more than 30 s');
}

const browser = await launch();
try {
  const page = await newPage(browser);
  page.on('pageerror', e => console.error('page error: ' + e.message));
  await page.goto(`${url}/#/wf/${uuid}`);
  await page.waitForFunction(() => document.getElementById('live')?.textContent.startsWith('updated'),
    {timeout: 60000});
  for (let i = 0; i < Number(jobsArg || 5); i++) {
    const job = `live_ID${String(i).padStart(3, '0')}_${Date.now()}`;
    execFileSync('sh', ['-c', env.ADD_JOB, 'add_job', job]);
    await until(`${job} becoming searchable`, () => searchable({wf_uuid: uuid, dag_job_id: job}));
    const seenAt = Date.now();
    await until(`${job} appearing on the page`, () => page.evaluate(
      id => [...document.querySelectorAll('td a')].some(a => a.textContent === id), job))
      .catch(async e => {
        const live = await page.evaluate(() => document.getElementById('live').textContent);
        throw new Error(`${e.message} (the page says "${live}")`);
      });
    console.log(`live_ms ${Date.now() - seenAt}`);
  }
} finally {
  await browser.close();
}
