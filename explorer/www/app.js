/*
 * pano-explorer's pages: the workflows, a workflow, a job; each has a link
 * of its own (#/, #/wf/UUID, #/wf/UUID/job/JOB) and updates itself while
 * the workflow runs. Everything shown of an event is text: the DOM is built
 * with createElement and textContent, never from HTML strings.
 */
'use strict';

const STATE_COLOURS = {
  running: '#2563eb', succeeded: '#16a34a', failed: '#dc2626', killed: '#9333ea',
  lost: '#f59e0b', queued: '#94a3b8', held: '#64748b',
};
const REFRESH_RUNNING = 1000;  // ms between the starts of two refreshes, while something runs
const REFRESH_IDLE = 10000;
const REFRESH_GAP = 250;       // ms at least between one refresh's end and the next's start

/* ---- DOM ------------------------------------------------------------------ */

// el('td', {class: 'num'}, 'text', child, ...): strings become text nodes.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return node;
}

// A state as a coloured label (colour: the class of another state's colour).
function badge(text, colour) { return el('span', {class: 'badge ' + (colour || text)}, text); }

function link(href, text) { return el('a', {href}, text); }

// columns: [{title, num, wrap, cell: row => string|Node}]
function tableNode(columns, body) {
  return el('div', {class: 'table-wrap'}, el('table', {},
    el('thead', {}, el('tr', {}, columns.map(c => el('th', {class: c.num ? 'num' : null}, c.title)))),
    body));
}
function rowNode(columns, r) {
  return el('tr', {}, columns.map(c => el('td', {class: c.num ? 'num' : c.wrap ? 'wrap' : null}, c.cell(r))));
}
function table(columns, rows) {
  return tableNode(columns, el('tbody', {}, rows.map(r => rowNode(columns, r))));
}

// A table redrawn every second that may hold thousands of rows (a
// workflow's jobs). It shows at most `shown` of them, SHOWN_ROWS more at a
// click: the browser took 3 s on the 2-core machine to lay out 10,000 rows
// of 11 cells, and the page did not answer meanwhile. A filter keeps the
// rows whose text(row) holds what is typed. update(rows) keeps the row of
// every unchanged row (same key, same data) and builds only the others, so
// a refresh of 10,000 jobs of which 20 run touches about 20 rows.
const SHOWN_ROWS = 500;
class LiveTable {
  constructor(columns, key, text, noun) {
    this.columns = columns;
    this.key = key;
    this.text = text;
    this.noun = noun;
    this.all = [];
    this.shown = SHOWN_ROWS;
    this.rows = new Map();  // key -> {data: JSON of the row, node}
    this.body = el('tbody', {});
    this.filter = el('input', {type: 'search', placeholder: 'filter', 'aria-label': 'filter the ' + noun,
                               oninput: () => { this.shown = SHOWN_ROWS; this.draw(); }});
    this.count = el('span', {class: 'muted'});
    this.more = el('button', {type: 'button', onclick: () => { this.shown += SHOWN_ROWS; this.draw(); }},
                   `show ${SHOWN_ROWS} more`);
    this.node = el('div', {}, el('div', {class: 'controls'}, this.filter, this.count),
                   tableNode(columns, this.body), el('div', {class: 'controls'}, this.more));
  }
  update(rows) {
    this.all = rows;
    this.draw();
  }
  draw() {
    const words = this.filter.value.trim().toLowerCase();
    const matching = words ? this.all.filter(r => this.text(r).toLowerCase().includes(words)) : this.all;
    const rows = matching.slice(0, this.shown);
    this.count.textContent = (words ? `${matching.length} of ${this.all.length} ${this.noun} match` :
      `${this.all.length} ${this.noun}`) + (rows.length < matching.length ? `, the first ${rows.length} shown` : '');
    this.more.hidden = rows.length === matching.length;
    const next = new Map();
    const nodes = rows.map(r => {
      const k = this.key(r), data = JSON.stringify(r);
      if (next.has(k)) return rowNode(this.columns, r);  // a key twice: never one node in two places
      const old = this.rows.get(k);
      const kept = old && old.data === data ? old : {data, node: rowNode(this.columns, r)};
      next.set(k, kept);
      return kept.node;
    });
    this.rows = next;
    // drop the rows that went, then put each in place; rows that stayed in
    // order are passed over without being moved
    const wanted = new Set(nodes);
    for (const child of [...this.body.children]) if (!wanted.has(child)) child.remove();
    let at = this.body.firstChild;
    for (const node of nodes) {
      if (node === at) at = at.nextSibling;
      else this.body.insertBefore(node, at);
    }
  }
}

/* ---- formats ---------------------------------------------------------------- */

function fmtTime(epoch) {
  if (epoch === null || epoch === undefined || !(epoch > 0)) return '–';
  const d = new Date(epoch * 1000);
  const pad = n => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
// hh:mm:ss, with `decimals` digits of the second (0 to 3)
function fmtClock(epoch, decimals = 0) {
  const scale = 10 ** decimals;
  const rounded = Math.round(epoch * scale) / scale;
  const whole = Math.floor(rounded);
  const clock = fmtTime(whole).slice(11);
  if (!decimals) return clock;
  return clock + '.' + String(Math.round((rounded - whole) * scale)).padStart(decimals, '0');
}
// the digits of the second that tell apart times `step` seconds apart: a
// step of 1 s or more needs none, 0.5 s one, 0.05 s two
function stepDecimals(step) {
  return step > 0 ? Math.min(3, Math.max(0, Math.ceil(-Math.log10(step) - 1e-3))) : 0;
}
function fmtSeconds(s) {
  if (s === null || s === undefined || !isFinite(s) || s < 0) return '–';
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + ' s';
  if (s < 3600) return `${Math.floor(s / 60)}m${String(Math.floor(s % 60)).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor(s / 60 % 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${String(Math.floor(s / 3600 % 24)).padStart(2, '0')}h`;
}
function fmtBytes(b) {
  if (b === null || b === undefined || !isFinite(b) || b < 0) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let u = 0;
  while (b >= 1024 && u < units.length - 1) { b /= 1024; u++; }
  return (u ? b.toFixed(1) : String(Math.round(b))) + ' ' + units[u];
}
function fmtNum(v, d = 2) { return v === null || v === undefined || !isFinite(v) ? '–' : Number(v).toFixed(d); }
function fmtExit(job) {
  if (job.state === 'killed') return 'signal ' + job.signal;
  return job.exitcode === null || job.exitcode === undefined ? '–' : String(job.exitcode);
}
function jobHref(uuid, id) { return `#/wf/${uuid}/job/${encodeURIComponent(id)}`; }

/* ---- the API ------------------------------------------------------------------ */

async function api(path) {
  const r = await fetch('api/' + path, {headers: {Accept: 'application/json'}});
  let body;
  try { body = await r.json(); } catch (e) { body = {error: `HTTP ${r.status}`}; }
  if (!r.ok) throw new Error(body.error || `HTTP ${r.status}`);
  return body;
}

// The dot at the top right. askedAt (ms since the epoch): when the data on
// the page was asked for, kept in data-asked-at; what was searchable before
// that moment is on the page.
function setLive(ok, text, askedAt) {
  const live = document.getElementById('live');
  live.className = 'live ' + (ok ? 'ok' : 'error');
  live.textContent = text;
  if (askedAt) live.dataset.askedAt = String(askedAt);
}

/* ---- charts ------------------------------------------------------------------- */

// Metrics shown on pages, and how their values are scaled for people.
const CHARTS = {
  cpu: {title: 'CPU (CPUs busy)', scale: v => v},
  rss: {title: 'Memory, resident (MiB)', scale: v => v / 1024},
  read: {title: 'Read (MiB/s)', scale: v => v / 1048576},
  write: {title: 'Written (MiB/s)', scale: v => v / 1048576},
  threads: {title: 'Threads', scale: v => v},
  procs: {title: 'Processes', scale: v => v},
};

class ChartBox {
  constructor(metric) {
    this.metric = metric;
    this.canvas = el('canvas', {'data-metric': metric});
    this.empty = el('div', {class: 'empty'}, 'no samples yet');
    this.node = el('div', {class: 'chart-box'}, el('h3', {}, CHARTS[metric].title),
      el('div', {class: 'canvas-wrap'}, this.canvas), this.empty);
    this.chart = null;
  }
  // running: whether samples may still come (else an empty chart says why)
  // A rate draws its value per bucket; a gauge its mean (filled) and, above
  // it, a thin lighter line of its peak, the highest it reached in the bucket.
  update(series, running) {
    const scale = CHARTS[this.metric].scale, gauge = series.kind === 'gauge';
    const points = series.samples ? series.points.map(p => ({x: p.t, y: scale(p.value)})) : [];
    const peaks = series.samples && gauge ? series.points.map(p => ({x: p.t, y: scale(p.peak)})) : [];
    this.empty.textContent = running ? 'no samples yet' : 'no samples: not run under pano-monitor';
    this.empty.hidden = points.length > 0;
    this.canvas.parentNode.hidden = points.length === 0;
    if (typeof Chart === 'undefined') { this.empty.hidden = false; this.empty.textContent = 'Chart.js is not installed'; return; }
    if (!this.chart) {
      const datasets = [{label: gauge ? 'mean' : '', data: points, borderColor: '#2563eb',
                         backgroundColor: 'rgba(37,99,235,.12)', fill: true, pointRadius: 0,
                         borderWidth: 1.5, stepped: false}];
      if (gauge)
        datasets.push({label: 'peak', data: peaks, borderColor: 'rgba(37,99,235,.45)', fill: false,
                       pointRadius: 0, borderWidth: 1, stepped: false});
      this.chart = new Chart(this.canvas, {
        type: 'line',
        data: {datasets},
        options: {
          animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
          interaction: {mode: 'nearest', intersect: false, axis: 'x'},
          plugins: {legend: {display: false},
                    tooltip: {callbacks: {title: items => fmtTime(items[0].parsed.x),
                                          label: item => (item.dataset.label ? item.dataset.label + ' ' : '') +
                                                         fmtNum(item.parsed.y, 3)}}},
          scales: {x: {type: 'linear', ticks: {callback: (v, i, ticks) =>
                                                 fmtClock(v, stepDecimals(ticks.length > 1 ? ticks[1].value - ticks[0].value : 1)),
                                               maxTicksLimit: 8}},
                   y: {beginAtZero: true}},
        },
      });
    } else {
      this.chart.data.datasets[0].data = points;
      if (gauge) this.chart.data.datasets[1].data = peaks;
    }
    this.chart.update('none');
  }
}

/* ---- the Gantt timeline -------------------------------------------------------- */

// Up to LABELLED_ROWS jobs get a labelled row each. A bigger workflow's jobs
// share rows (a job takes the row freed first, so the chart is as tall as the
// most jobs that ran at once), as many as fit in the box (FIT_HEIGHT px) at
// 2 px or more, else 2 px each up to MAX_ROWS_HEIGHT px, past which rows
// share pixels: a canvas taller than the browser allows (32,767 px in
// Chromium, device pixels) is drawn blank.
const LABELLED_ROWS = 400, FIT_HEIGHT = 436, MAX_ROWS_HEIGHT = 1600, AXIS_HEIGHT = 24;

const jobEnd = (j, now) => j.end || (j.state === 'running' ? now : j.start + (j.duration || 0));

// Started jobs in rows: [[job, ...], ...], each row's jobs in start order and
// not overlapping.
function ganttRows(jobs, now) {
  const started = jobs.filter(j => j.start > 0).sort((a, b) => a.start - b.start);
  if (started.length <= LABELLED_ROWS) return started.map(j => [j]);
  const rows = [], free = [];  // free: a min-heap of [end, row] by end
  const less = (a, b) => a[0] < b[0];
  const push = item => {
    let i = free.push(item) - 1;
    for (let p; i > 0 && less(free[i], free[p = (i - 1) >> 1]); i = p) [free[i], free[p]] = [free[p], free[i]];
  };
  const pop = () => {
    const top = free[0], last = free.pop();
    if (free.length) {
      free[0] = last;
      for (let i = 0; ;) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < free.length && less(free[l], free[m])) m = l;
        if (r < free.length && less(free[r], free[m])) m = r;
        if (m === i) break;
        [free[i], free[m]] = [free[m], free[i]];
        i = m;
      }
    }
    return top;
  };
  for (const j of started) {
    const row = free.length && free[0][0] <= j.start ? pop()[1] : rows.push([]) - 1;
    rows[row].push(j);
    push([jobEnd(j, now), row]);
  }
  return rows;
}

class Gantt {
  constructor(onClick) {
    this.canvas = el('canvas', {id: 'gantt'});
    this.note = el('span', {class: 'note'});
    this.node = el('div', {}, el('div', {class: 'gantt-wrap'}, this.canvas),
      el('div', {class: 'legend'}, Object.keys(STATE_COLOURS).map(s => el('span', {class: s}, s)), this.note));
    this.rows = [];
    this.canvas.addEventListener('mousemove', e => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { tooltip(null); });
    this.canvas.addEventListener('click', e => { const j = this.at(e); if (j) onClick(j); });
  }
  draw(jobs, now) {
    const rows = this.rows = ganttRows(jobs, now), n = rows.length;
    const started = rows.reduce((count, r) => count + r.length, 0);
    const labelled = started <= LABELLED_ROWS;  // a row each (ganttRows)
    this.note.textContent = labelled ? ''
      : `${started} jobs in ${n} rows` + (n < started ? ': jobs that did not overlap share a row' : '');
    const width = this.canvas.parentNode.clientWidth || 1000;
    const row = this.row = labelled ? 16 : Math.min(16, Math.max(FIT_HEIGHT / n, Math.min(2, MAX_ROWS_HEIGHT / n)));
    const label = this.label = labelled ? 180 : 0;
    const height = Math.max(40, Math.round(n * row) + AXIS_HEIGHT);
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = width * ratio;
    this.canvas.height = height * ratio;
    this.canvas.style.width = width + 'px';
    this.canvas.style.height = height + 'px';
    const g = this.canvas.getContext('2d');
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, height);
    if (!n) { g.fillStyle = '#6b7280'; g.fillText('no job has started yet', 10, 24); return; }
    let t0 = Infinity, t1 = -Infinity;
    for (const r of rows) for (const j of r) { t0 = Math.min(t0, j.start); t1 = Math.max(t1, jobEnd(j, now)); }
    t1 = Math.max(t1, t0 + 1);
    const x = this.x = t => label + (t - t0) / (t1 - t0) * (width - label - 10);
    this.t0 = t0; this.t1 = t1; this.now = now;
    g.font = '11px system-ui, sans-serif';
    // time axis
    g.fillStyle = '#6b7280';
    for (let i = 0; i <= 5; i++) {
      const t = t0 + (t1 - t0) * i / 5;
      g.fillRect(x(t), 0, 1, height - 20);
      g.fillText(fmtClock(t, stepDecimals((t1 - t0) / 5)), Math.min(x(t) + 2, width - 60), height - 6);
    }
    const gap = row > 4 ? 2 : 0;
    rows.forEach((r, i) => r.forEach(j => {
      const y = i * row, end = jobEnd(j, now);
      g.fillStyle = STATE_COLOURS[j.state] || '#94a3b8';
      g.fillRect(x(j.start), y + gap, Math.max(2, x(end) - x(j.start)), Math.max(1, row - 2 * gap));
      if ((j.state === 'failed' || j.state === 'killed') && row >= 8) {  // a failure is marked at its end
        g.fillStyle = '#7f1d1d';
        g.fillText('✕', x(end) + 3, y + row - 4);
      }
      if (label) { g.fillStyle = '#1d2430'; g.fillText(j.id.length > 28 ? j.id.slice(0, 27) + '…' : j.id, 4, y + row - 4); }
    }));
  }
  // The job under the mouse: in a labelled row anywhere on it; in a shared
  // row the one running at that time, or one within 4 px of it.
  at(e) {
    const r = this.canvas.getBoundingClientRect();
    const jobs = this.rows[Math.floor((e.clientY - r.top) / this.row)];
    if (!jobs || this.label) return jobs && jobs[0];
    const px = (this.t1 - this.t0) / Math.max(1, this.x(this.t1) - this.x(this.t0));
    const t = this.t0 + (e.clientX - r.left - this.label) * px;
    let lo = 0, hi = jobs.length;  // the first job starting after t
    while (lo < hi) { const m = (lo + hi) >> 1; if (jobs[m].start <= t) lo = m + 1; else hi = m; }
    const before = jobs[lo - 1], after = jobs[lo];
    if (before && t <= jobEnd(before, this.now) + 4 * px) return before;
    if (after && after.start - t <= 4 * px) return after;
    return null;
  }
  hover(e) {
    const j = this.at(e);
    if (!j) { tooltip(null); return; }
    tooltip(`${j.id}\n${j.state}, exit ${fmtExit(j)}\n${fmtSeconds(j.duration)} on ${j.host || '?'}\n` +
            `${j.transformation || ''}\nstarted ${fmtTime(j.start)}`, e.clientX, e.clientY);
  }
}

function tooltip(text, x, y) {
  const t = document.getElementById('tooltip');
  if (!text) { t.hidden = true; return; }
  t.textContent = text;
  t.hidden = false;
  t.style.left = Math.min(x + 14, window.innerWidth - 440) + 'px';
  t.style.top = (y + 14) + 'px';
}

/* ---- pages ---------------------------------------------------------------------- */

let current = null;  // the page on show: {stop()}

// Replace a node's children; absent ones (null, false) are left out.
function fill(node, ...children) {
  node.replaceChildren(...children.flat().filter(c => c !== null && c !== undefined && c !== false));
}

function show(...nodes) {
  fill(document.getElementById('main'), ...nodes);
}

// A page that refreshes itself: load() fetches, render(data) draws.
// Refreshes start at a fixed rate (every REFRESH_RUNNING ms from the start
// of the last one, not from its end), so what became searchable is shown
// within about a second plus one refresh, however long a refresh takes; a
// slow server still gets REFRESH_GAP ms of rest between two.
// Until the first answer came, an error is shown in place of the page (its
// parts are hidden, not removed: they are what later answers fill in).
function livePage(load, render, isRunning) {
  let timer = null, stopped = false, first = true, errorBox = null;
  const main = document.getElementById('main');
  const tick = async () => {
    const started = Date.now();
    try {
      const data = await load();
      if (stopped) return;
      if (errorBox) {
        errorBox.remove();
        errorBox = null;
        for (const part of main.children) part.hidden = false;
      }
      render(data, first);
      first = false;
      setLive(true, 'updated ' + fmtClock(Date.now() / 1000), started);
      const period = isRunning(data) ? REFRESH_RUNNING : REFRESH_IDLE;
      timer = setTimeout(tick, Math.max(period - (Date.now() - started), REFRESH_GAP));
    } catch (e) {
      if (stopped) return;
      setLive(false, e.message);
      if (first) {
        if (!errorBox) {
          for (const part of main.children) part.hidden = true;
          errorBox = main.insertBefore(el('div', {class: 'error-box'}), main.firstChild);
        }
        errorBox.textContent = e.message;
      }
      timer = setTimeout(tick, REFRESH_IDLE);
    }
  };
  tick();
  return {stop() { stopped = true; clearTimeout(timer); }};
}

function workflowsPage() {
  let since = '30d';
  const select = el('select', {onchange: e => { since = e.target.value; page.stop(); page = start(); }},
    ['1d', '7d', '30d', '365d', '3650d'].map(v => el('option', {value: v}, v)));
  select.value = since;
  const body = el('div', {});
  show(el('h1', {}, 'Workflows'), el('div', {class: 'controls'}, 'with events in the last ', select), body);
  const start = () => livePage(() => api('workflows?since=' + since), list => {
    fill(body, list.length ? table([
      {title: 'Workflow', cell: w => link('#/wf/' + w.wf_uuid, w.wf_label || '(no label)')},
      {title: 'UUID', cell: w => el('span', {class: 'mono'}, w.wf_uuid)},
      {title: 'State', cell: w => badge(w.state)},
      {title: 'Started', cell: w => fmtTime(w.first_event)},
      {title: 'Last event', cell: w => fmtTime(w.last_event)},
      // null: a workflow known only from pegasus-monitord (its page counts its jobs)
      {title: 'Runs', num: true, cell: w => String(w.runs ?? '–')},
      {title: 'Running', num: true, cell: w => String(w.running ?? '–')},
      {title: 'Succeeded', num: true, cell: w => String(w.succeeded ?? '–')},
      {title: 'Failed', num: true, cell: w => String(w.failed ?? '–')},
    ], list) : el('p', {class: 'muted'}, 'No workflow has events in this time.'));
  }, list => list.some(w => w.state === 'running'));
  let page = start();
  return {stop() { page.stop(); }};
}

function card(label, value) {
  return el('div', {class: 'card'}, el('div', {class: 'label'}, label), el('div', {class: 'value'}, value));
}

function workflowState(wf) {
  const st = wf.stats;
  if (st.status) return st.status.state;
  const by = st.jobs.by_state;
  return by.running ? 'running' : by.failed + by.killed ? 'failed' : 'succeeded';
}

// Whether a workflow has jobs that run or wait to: more data will come.
const active = wf => wf.jobs.some(j => j.state === 'running' || j.state === 'queued');

function workflowPage(uuid) {
  const head = el('div', {}), cards = el('div', {class: 'cards'});
  const gantt = new Gantt(j => { location.hash = jobHref(uuid, j.id); });
  const charts = ['cpu', 'rss', 'read', 'write'].map(m => new ChartBox(m));
  const pegasus = el('div', {}), transformations = el('div', {}), hosts = el('div', {});
  const anomalies = el('div', {}), io = el('div', {}), jobs = jobsTable(uuid);
  show(head, cards, el('h2', {}, 'Jobs over time'), gantt.node,
       el('h2', {}, 'CPU, memory and I/O'), el('div', {class: 'charts'}, charts.map(c => c.node)),
       pegasus, el('h2', {}, 'By transformation'), transformations, el('h2', {}, 'By host'), hosts,
       el('h2', {}, 'Anomalies'), anomalies, el('h2', {}, 'I/O: Darshan and transfers'), io,
       el('h2', {}, 'Jobs'), jobs.node);
  // one request: the workflow's jobs are read once for it and its charts
  const metrics = charts.map(c => c.metric).join(',');
  return livePage(async () => {
    const wf = await api(`workflows/${uuid}?series=${metrics}`);
    return {wf, series: charts.map(c => wf.series[c.metric])};
  }, ({wf, series}) => {
    const st = wf.stats, state = workflowState(wf);
    fill(head, el('h1', {}, wf.wf_label || 'Workflow', ' ', badge(state)),
      el('div', {class: 'muted mono'}, wf.wf_uuid));
    const by = st.jobs.by_state;
    fill(cards,
      card('Started', fmtTime(wf.first_event)), card('Running time', fmtSeconds(st.wall_time_so_far)),
      card('Jobs', String(st.jobs.total)), card('Running', String(by.running)),
      card('Succeeded', String(st.jobs.succeeded)), card('Failed', String(st.jobs.failed)),
      card('Lost', String(by.lost)),
      card('Cumulative job time', fmtSeconds(st.workflow_cumulative_job_wall_time)),
      st.status ? card('Done (DAG nodes)', st.status.percent_done.toFixed(1) + ' %') : null);
    gantt.draw(wf.jobs, wf.now);
    charts.forEach((c, i) => c.update(series[i], active(wf)));
    fill(pegasus, ...(st.tasks ? [el('h2', {}, 'As pegasus-statistics counts'), table([
      {title: 'Type', cell: r => r[0]},
      {title: 'Succeeded', num: true, cell: r => String(r[1].succeeded)},
      {title: 'Failed', num: true, cell: r => String(r[1].failed)},
      {title: 'Incomplete', num: true, cell: r => String(r[1].incomplete)},
      {title: 'Total', num: true, cell: r => String(r[1].total)},
      {title: 'Retries', num: true, cell: r => String(r[1].retries)},
      {title: 'Total+Retries', num: true, cell: r => String(r[1].total_with_retries)},
    ], [['Tasks', st.tasks], ['Jobs', st.jobs], ['Sub-workflows', st.sub_workflows]]),
      el('p', {class: 'muted'}, `Workflow wall time ${fmtSeconds(st.workflow_wall_time)}; cumulative job wall time ` +
        `${fmtSeconds(st.workflow_cumulative_job_wall_time)} (submit side ${fmtSeconds(st.cumulative_job_walltime_from_submit_side)}); ` +
        `badput ${fmtSeconds(st.workflow_cumulative_badput_time)}.`)] : []));
    const groupColumns = key => [
      {title: key === 'host' ? 'Host' : 'Transformation', cell: g => g[key] || '–'},
      {title: 'Runs', num: true, cell: g => String(g.count)},
      {title: 'Failed', num: true, cell: g => String(g.failed)},
      {title: 'Running', num: true, cell: g => String(g.running)},
      {title: 'Duration min', num: true, cell: g => fmtSeconds(g.duration.min)},
      {title: 'median', num: true, cell: g => fmtSeconds(g.duration.median)},
      {title: 'mean', num: true, cell: g => fmtSeconds(g.duration.mean)},
      {title: 'p95', num: true, cell: g => fmtSeconds(g.duration.p95)},
      {title: 'max', num: true, cell: g => fmtSeconds(g.duration.max)},
      {title: 'CPU mean', num: true, cell: g => fmtSeconds(g.cpu_time.mean)},
      {title: 'Max RSS', num: true, cell: g => fmtBytes(g.maxrss.max * 1024)},
      {title: 'Read', num: true, cell: g => fmtBytes(g.bytes_read.total)},
      {title: 'Written', num: true, cell: g => fmtBytes(g.bytes_written.total)},
    ];
    fill(transformations, table(groupColumns('transformation'), st.transformations));
    fill(hosts, table(groupColumns('host'), st.hosts));
    fill(anomalies, wf.anomalies.length ? table([
      {title: 'Kind', cell: a => badge(a.kind, a.kind === 'failed' ? 'failed' : a.kind === 'overdue' ? 'lost' : 'killed')},
      {title: 'Job', cell: a => link(jobHref(uuid, a.job), a.job)},
      {title: 'Transformation', cell: a => a.transformation},
      {title: 'What', cell: a => a.kind === 'failed' ? `exit ${a.signal ? 'signal ' + a.signal : a.value}` :
        `${a.metric} ${fmtNum(a.value, 3)} against a median of ${fmtNum(a.median, 3)}`},
      {title: 'Score', num: true, cell: a => a.kind === 'failed' ? '' : fmtNum(a.score, 2)},
    ], wf.anomalies) : el('p', {class: 'muted'}, 'None.'));
    fill(io, ioCards(wf.io));
    jobs.update(newestFirst(wf.jobs));
  }, ({wf}) => active(wf));
}

function ioCards(io) {
  const d = io.darshan, t = io.transfers;
  return el('div', {class: 'cards'},
    card('Darshan logs', String(d.logs)),
    card('POSIX read', fmtBytes(d.modules.POSIX.bytes_read)),
    card('POSIX written', fmtBytes(d.modules.POSIX.bytes_written)),
    card('MPI-IO read / written', fmtBytes(d.modules['MPI-IO'].bytes_read) + ' / ' + fmtBytes(d.modules['MPI-IO'].bytes_written)),
    card('POSIX agg. perf (MiB/s)', fmtNum(d.posix_agg_perf_by_slowest.mean, 1)),
    card('Transfers', `${t.files} (${t.failed} failed)`),
    card('Transferred', fmtBytes(t.bytes)),
    card('Transfer rate, mean', t.mean_rate === null ? '–' : fmtBytes(t.mean_rate) + '/s'));
}

function jobsTable(uuid) {
  return new LiveTable([
    {title: 'Job', cell: j => link(jobHref(uuid, j.id), j.id)},
    {title: 'State', cell: j => badge(j.state)},
    {title: 'Exit', num: true, cell: j => fmtExit(j)},
    {title: 'Transformation', cell: j => j.transformation},
    {title: 'Host', cell: j => j.host || '–'},
    {title: 'Start', cell: j => fmtTime(j.start)},
    {title: 'Duration', num: true, cell: j => fmtSeconds(j.duration)},
    {title: 'CPU', num: true, cell: j => fmtSeconds(j.cpu_time)},
    {title: 'Max RSS', num: true, cell: j => fmtBytes(j.maxrss === null ? null : j.maxrss * 1024)},
    {title: 'Read', num: true, cell: j => fmtBytes(j.bytes_read)},
    {title: 'Written', num: true, cell: j => fmtBytes(j.bytes_written)},
  ], j => j.id,  // the run: "dag_job_id#N" from its second attempt on
  j => `${j.id} ${j.state} ${j.transformation || ''} ${j.host || ''}`, 'jobs');
}

// The jobs as the table lists them: what waits to start first, then the
// most recently started (what a running workflow is doing comes first).
const newestFirst = jobs => [...jobs].sort((a, b) => ((b.start || Infinity) - (a.start || Infinity)) || 0);

function jobPage(uuid, id) {
  const head = el('div', {}), facts = el('div', {class: 'panel kv'});
  const charts = ['cpu', 'rss', 'read', 'write', 'threads'].map(m => new ChartBox(m));
  const darshan = el('div', {}), transfers = el('div', {}), events = el('div', {});
  show(head, facts, el('h2', {}, 'CPU, memory, I/O and threads'), el('div', {class: 'charts'}, charts.map(c => c.node)),
       el('h2', {}, 'Darshan'), darshan, el('h2', {}, 'Transfers'), transfers,
       el('h2', {}, 'Payload and custom-metric events'), events);
  const metrics = charts.map(c => c.metric).join(',');
  return livePage(async () => {
    const job = await api(`workflows/${uuid}/jobs/${encodeURIComponent(id)}?series=${metrics}`);
    return {job, series: charts.map(c => job.series[c.metric])};
  }, ({job, series}) => {
    fill(head, el('div', {}, link('#/wf/' + uuid, job.wf_label || uuid), ' › job'),
      el('h1', {}, job.id, ' ', badge(job.state)));
    const start = job.start_event || {};
    const argv = Array.isArray(start.argv) ? start.argv.join(' ') : '';
    const rows = [
      ['DAG job id', job.dag_job_id || '–'], ['Attempt', String(job.attempt)],
      ['Exit code', fmtExit(job)], ['Transformation', job.transformation || '–'],
      ['Executable', job.exe || start.executable || '–'], ['Arguments', argv || '–'],
      ['Host', job.host || '–'], ['Site', job.site || '–'], ['PID', job.pid === null ? '–' : String(job.pid)],
      ['Started', fmtTime(job.start)], ['Ended', fmtTime(job.end)], ['Duration', fmtSeconds(job.duration)],
      ['CPU time', fmtSeconds(job.cpu_time)], ['Max RSS', fmtBytes(job.maxrss === null ? null : job.maxrss * 1024)],
      ['Read', fmtBytes(job.bytes_read)], ['Written', fmtBytes(job.bytes_written)],
      ['Samples', `${job.samples}${job.interval ? ' every ' + fmtSeconds(job.interval) : ''}`],
      ['Working directory', start.cwd || '–'], ['User', start.user || '–'],
    ];
    fill(facts, ...rows.flatMap(([k, v]) => [el('div', {class: 'k'}, k), el('div', {class: 'v wrap', 'data-field': k}, v)]));
    charts.forEach((c, i) => c.update(series[i], job.state === 'running'));
    const logs = job.events.filter(e => e.event === 'darshan.perf');
    fill(darshan, logs.length ? table([
      {title: 'Log', cell: e => e.log_file || '–'},
      {title: 'Module', cell: e => e._module},
      {title: 'Bytes', num: true, cell: e => fmtBytes(e._data.total_bytes)},
      {title: 'Agg. perf by slowest (MiB/s)', num: true, cell: e => fmtNum(e._data.agg_perf_by_slowest, 2)},
      {title: 'Records', num: true, cell: e => e._data.records === undefined ? '–' : String(e._data.records)},
    ], logs.flatMap(e => Object.keys(e).filter(k => k.endsWith('_module_data'))
      .map(k => Object.assign({}, e, {_module: k.replace('_module_data', ''), _data: e[k]}))))
      : el('p', {class: 'muted'}, 'No Darshan log.'));
    const xfers = job.events.filter(e => e.event === 'transfer.inv.local.single');
    fill(transfers, xfers.length ? table([
      {title: 'Source', wrap: true, cell: e => e.source_url || e.filename || '–'},
      {title: 'Destination', wrap: true, cell: e => e.destination_url || '–'},
      {title: 'Bytes', num: true, cell: e => fmtBytes(e.bytes_transferred)},
      {title: 'Duration', num: true, cell: e => fmtSeconds(e.transfer_duration)},
      {title: 'Rate', num: true, cell: e => e.effective_bytes_per_second ? fmtBytes(e.effective_bytes_per_second) + '/s' : '–'},
      {title: 'Status', cell: e => badge(e.status === 0 ? 'succeeded' : 'failed')},
    ], xfers) : el('p', {class: 'muted'}, 'No transfer.'));
    const others = job.events.filter(e => e.event !== 'darshan.perf' && !e.event.startsWith('transfer.'));
    fill(events, others.length ? table([
      {title: 'Time', cell: e => fmtTime(e.ts)},
      {title: 'Event', cell: e => e.event},
      {title: 'Fields', wrap: true, cell: e => Object.entries(e)
        .filter(([k]) => !['event', 'ts', 'event_id', 'seq', 'hostname', 'wf_uuid', 'wf_label', 'dag_job_id',
                           'condor_job_id', 'xformation', 'task_id', 'site', '@timestamp'].includes(k))
        .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`).join('  ')},
    ], others) : el('p', {class: 'muted'}, 'None.'));
  }, ({job}) => job.state === 'running' || job.state === 'queued');
}

/* ---- routing ------------------------------------------------------------------------ */

function route() {
  if (current) current.stop();
  tooltip(null);
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  if (parts[0] === 'wf' && parts[1] && parts[2] === 'job' && parts[3])
    current = jobPage(parts[1], decodeURIComponent(parts.slice(3).join('/')));
  else if (parts[0] === 'wf' && parts[1])
    current = workflowPage(parts[1]);
  else
    current = workflowsPage();
}

window.addEventListener('hashchange', route);
route();
