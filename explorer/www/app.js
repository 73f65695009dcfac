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
const REFRESH_IDLE = 10000;    // otherwise, and at most while nothing changes
const REFRESH_GAP = 250;       // ms at least between one refresh's end and the next's start
const QUIET_GRACE = 2;         // answers with nothing new before refreshes slow down

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

// The runs of a workflow as a table, paged and filtered by the server
// (GET /api/workflows/UUID/jobs): whatever the workflow's size, the page gets
// only the rows it shows. It shows the first `shown` rows the filter keeps,
// SHOWN_ROWS more at a click (the browser took 3 s on the 2-core machine to
// lay out 10,000 rows of 11 cells, and the page did not answer meanwhile);
// what is typed in the filter is asked for FILTER_PAUSE ms after the last
// key. ask(query) gets a page: {total, runs, jobs}. show() keeps the row of
// every unchanged row (same key, same data) and builds only the others, so a
// refresh of 500 rows of which 20 run touches about 20 rows. Only the answer
// to the latest question is shown.
const SHOWN_ROWS = 500, FILTER_PAUSE = 250;
class RunsTable {
  constructor(columns, key, noun, ask) {
    this.columns = columns;
    this.key = key;
    this.noun = noun;
    this.ask = ask;
    this.shown = SHOWN_ROWS;
    this.asked = 0;         // the latest question's number
    this.list = [];         // the rows shown
    this.rows = new Map();  // key -> {data: JSON of the row, node}
    this.body = el('tbody', {});
    this.filter = el('input', {type: 'search', placeholder: 'filter', 'aria-label': 'filter the ' + noun,
                               oninput: () => {
                                 clearTimeout(this.typing);
                                 this.typing = setTimeout(() => { this.shown = SHOWN_ROWS; this.reload(); }, FILTER_PAUSE);
                               }});
    this.count = el('span', {class: 'muted'});
    this.more = el('button', {type: 'button', onclick: () => this.loadMore()}, `show ${SHOWN_ROWS} more`);
    this.node = el('div', {}, el('div', {class: 'controls'}, this.filter, this.count),
                   tableNode(columns, this.body), el('div', {class: 'controls'}, this.more));
  }
  words() { return this.filter.value.trim(); }
  query(offset, limit) {
    return `offset=${offset}&limit=${limit}` + (this.words() ? '&q=' + encodeURIComponent(this.words()) : '');
  }
  // The rows on show, asked again: {asked, answer}, for show().
  async fetch() {
    const asked = ++this.asked;
    return {asked, answer: await this.ask(this.query(0, this.shown))};
  }
  async reload() {
    try { this.show(await this.fetch()); } catch (e) { setLive(false, e.message); }
  }
  async loadMore() {
    const asked = ++this.asked;
    try {
      const answer = await this.ask(this.query(this.list.length, SHOWN_ROWS));
      if (asked !== this.asked) return;
      this.shown = this.list.length + SHOWN_ROWS;
      this.show({asked, answer: Object.assign({}, answer, {jobs: this.list.concat(answer.jobs)})});
    } catch (e) { setLive(false, e.message); }
  }
  show({asked, answer}) {
    if (asked !== this.asked) return;  // a later question was asked
    const rows = this.list = answer.jobs;
    this.count.textContent = (this.words() ? `${answer.total} of ${answer.runs} ${this.noun} match` :
      `${answer.runs} ${this.noun}`) + (rows.length < answer.total ? `, the first ${rows.length} shown` : '');
    this.more.hidden = rows.length >= answer.total;
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

// The options of a chart over time (x: epoch seconds), shared by the
// metrics' charts and the custom metrics'.
function timeChartOptions(beginAtZero) {
  return {
    animation: false, parsing: false, normalized: true, maintainAspectRatio: false,
    interaction: {mode: 'nearest', intersect: false, axis: 'x'},
    plugins: {legend: {display: false},
              tooltip: {callbacks: {title: items => fmtTime(items[0].parsed.x),
                                    label: item => (item.dataset.label ? item.dataset.label + ' ' : '') +
                                                   fmtNum(item.parsed.y, 3)}}},
    scales: {x: {type: 'linear', ticks: {callback: (v, i, ticks) =>
                                           fmtClock(v, stepDecimals(ticks.length > 1 ? ticks[1].value - ticks[0].value : 1)),
                                         maxTicksLimit: 8}},
             y: {beginAtZero}},
  };
}

// A custom metric of a job (custom.metric events): each value as sent, at
// its time.
class CustomChart {
  constructor(name) {
    this.canvas = el('canvas', {'data-custom': name});
    this.node = el('div', {class: 'chart-box'}, el('h3', {}, name), el('div', {class: 'canvas-wrap'}, this.canvas));
    this.chart = null;
  }
  update(points) {
    if (typeof Chart === 'undefined') return;
    const data = points.map(([t, v]) => ({x: t, y: v}));
    if (!this.chart)
      this.chart = new Chart(this.canvas, {type: 'line', options: timeChartOptions(false), data: {datasets: [{
        label: '', data, borderColor: '#7c3aed', fill: false, pointRadius: data.length > 60 ? 0 : 2, borderWidth: 1.5}]}});
    else
      this.chart.data.datasets[0].data = data;
    this.chart.update('none');
  }
}

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
      this.chart = new Chart(this.canvas, {type: 'line', data: {datasets}, options: timeChartOptions(true)});
    } else {
      this.chart.data.datasets[0].data = points;
      if (gauge) this.chart.data.datasets[1].data = peaks;
    }
    this.chart.update('none');
  }
}

/* ---- the Gantt timeline -------------------------------------------------------- */

// A timeline draws what an answer of the API holds: its runs as bars, a
// labelled row each, when it has them (a workflow of at most 400 runs, or a
// window of the timeline with at most 400 alive in it), else its overview:
// how many runs were alive at once in each pixel's time, by state, as
// stacked bands. A drag across it zooms into that time (onZoom(from, to)),
// which the page asks for and draws the same way.
const BAR_ROW = 16, BAR_LABEL = 180, BAND_HEIGHT = 220, BAND_GUTTER = 48, AXIS_HEIGHT = 24, RIGHT = 10;
const BAND_ORDER = ['failed', 'killed', 'lost', 'running', 'succeeded', 'held', 'queued'];  // bottom up

const jobEnd = (j, now) => j.end || (j.state === 'running' ? now : j.start + (j.duration || 0));

class Gantt {
  constructor(onClick, onZoom, onReset) {
    this.onClick = onClick;
    this.onZoom = onZoom;
    this.canvas = el('canvas', {id: 'gantt'});
    this.selection = el('div', {class: 'zoom-box', hidden: 'hidden'});
    this.note = el('span', {class: 'note'});
    this.reset = el('button', {type: 'button', hidden: 'hidden', onclick: onReset}, 'reset zoom');
    this.node = el('div', {}, el('div', {class: 'gantt-wrap'}, this.canvas, this.selection),
      el('div', {class: 'legend'}, Object.keys(STATE_COLOURS).map(s => el('span', {class: s}, s)), this.note, this.reset));
    this.rows = [];
    this.canvas.addEventListener('mousemove', e => this.hover(e));
    this.canvas.addEventListener('mouseleave', () => { tooltip(null); });
    // a drag is followed over the whole window, until the button is up
    const move = e => this.dragTo(e), up = e => {
      window.removeEventListener('mousemove', move);
      window.removeEventListener('mouseup', up);
      this.drop(e);
    };
    this.canvas.addEventListener('mousedown', e => {
      if (e.button !== 0) return;
      this.drag = {from: e.clientX, to: e.clientX};
      e.preventDefault();
      window.addEventListener('mousemove', move);
      window.addEventListener('mouseup', up);
    });
  }
  // The overview's bins: about one per pixel of the time axis.
  bins() {
    const width = this.canvas.parentNode.clientWidth || 1000;
    return Math.max(50, Math.min(4000, Math.round(width - BAND_GUTTER - RIGHT)));
  }
  // view: {overview, jobs?}; now: the time running bars reach; zoomed: a
  // window of the timeline is on show.
  draw(view, now, zoomed) {
    const o = view.overview;
    this.view = view;
    this.now = now;
    this.t0 = o.from;
    this.t1 = o.to;
    this.reset.hidden = !zoomed;
    const decimals = stepDecimals((o.to - o.from) / 5);
    const span = zoomed ? ` from ${fmtClock(o.from, decimals)} to ${fmtClock(o.to, decimals)}` : '';
    if (Array.isArray(view.jobs)) {
      this.rows = view.jobs.filter(j => j.start > 0).sort((a, b) => a.start - b.start);
      this.note.textContent = zoomed ? `${this.rows.length} jobs${span}` : '';
      this.drawBars();
    } else {
      this.rows = [];
      this.note.textContent = `${o.runs} jobs${span}: how many ran at once, by state; drag across to zoom in`;
      this.drawBands(o);
    }
  }
  // A canvas of width x height CSS pixels, cleared, with the time axis.
  start(height, label) {
    const width = this.width = this.canvas.parentNode.clientWidth || 1000;
    const ratio = window.devicePixelRatio || 1;
    this.canvas.width = width * ratio;
    this.canvas.height = height * ratio;
    this.canvas.style.width = width + 'px';
    this.canvas.style.height = height + 'px';
    const g = this.canvas.getContext('2d');
    g.scale(ratio, ratio);
    g.clearRect(0, 0, width, height);
    g.font = '11px system-ui, sans-serif';
    this.label = label;
    const t0 = this.t0, t1 = this.t1;
    this.x = t => label + (t - t0) / (t1 - t0) * (width - label - RIGHT);
    g.fillStyle = '#6b7280';
    for (let i = 0; i <= 5; i++) {
      const t = t0 + (t1 - t0) * i / 5;
      g.fillRect(this.x(t), 0, 1, height - 20);
      g.fillText(fmtClock(t, stepDecimals((t1 - t0) / 5)), Math.min(this.x(t) + 2, width - 60), height - 6);
    }
    return g;
  }
  drawBars() {
    const rows = this.rows, n = rows.length, row = this.row = BAR_ROW;
    const g = this.start(Math.max(40, n * row + AXIS_HEIGHT), BAR_LABEL);
    if (!n) { g.fillStyle = '#6b7280'; g.fillText('no job has started yet', 10, 24); return; }
    const left = this.x(this.t0), right = this.x(this.t1);
    rows.forEach((j, i) => {
      const y = i * row, end = jobEnd(j, this.now);
      const x0 = Math.max(left, this.x(j.start)), x1 = Math.min(right, this.x(end));
      g.fillStyle = STATE_COLOURS[j.state] || '#94a3b8';
      g.fillRect(x0, y + 2, Math.max(2, x1 - x0), row - 4);
      if ((j.state === 'failed' || j.state === 'killed') && end <= this.t1) {  // a failure is marked at its end
        g.fillStyle = '#7f1d1d';
        g.fillText('✕', x1 + 3, y + row - 4);
      }
      g.fillStyle = '#1d2430';
      g.fillText(j.id.length > 28 ? j.id.slice(0, 27) + '…' : j.id, 4, y + row - 4);
    });
  }
  drawBands(o) {
    const g = this.start(BAND_HEIGHT + AXIS_HEIGHT, BAND_GUTTER);
    const top = 8, peak = Math.max(1, o.peak), scale = (BAND_HEIGHT - top) / peak;
    g.fillStyle = '#6b7280';
    for (const v of [0, Math.round(peak / 2), peak]) {
      const y = BAND_HEIGHT - v * scale;
      g.fillRect(BAND_GUTTER - 4, y, this.width - BAND_GUTTER - RIGHT + 4, 0.5);
      g.fillText(String(v), 4, Math.max(y + 4, 10));
    }
    const step = (o.to - o.from) / o.bins;
    for (let b = 0; b < o.bins; b++) {
      const x0 = this.x(o.from + b * step), x1 = this.x(o.from + (b + 1) * step);
      let y = BAND_HEIGHT;
      for (const state of BAND_ORDER) {
        const count = o.alive[state] ? o.alive[state][b] : 0;
        if (!count) continue;
        g.fillStyle = STATE_COLOURS[state];
        g.fillRect(x0, y - count * scale, Math.max(1, x1 - x0 + 0.5), count * scale);
        y -= count * scale;
      }
    }
    if (!o.runs) { g.fillStyle = '#6b7280'; g.fillText('no job has started yet', BAND_GUTTER + 10, 24); }
  }
  // The time at a mouse position, within the timeline.
  timeAt(clientX) {
    const r = this.canvas.getBoundingClientRect();
    const t = this.t0 + (clientX - r.left - this.label) / (this.width - this.label - RIGHT) * (this.t1 - this.t0);
    return Math.min(this.t1, Math.max(this.t0, t));
  }
  // The job under the mouse: in a row anywhere on it.
  at(e) {
    const r = this.canvas.getBoundingClientRect();
    return this.rows[Math.floor((e.clientY - r.top) / this.row)] || null;
  }
  hover(e) {
    if (this.drag) return;
    if (!Array.isArray(this.view?.jobs)) { this.hoverBand(e); return; }
    const j = this.at(e);
    if (!j) { tooltip(null); return; }
    tooltip(`${j.id}\n${j.state}, exit ${fmtExit(j)}\n${fmtSeconds(j.duration)} on ${j.host || '?'}\n` +
            `${j.transformation || ''}\nstarted ${fmtTime(j.start)}`, e.clientX, e.clientY);
  }
  // Over the bands: the time of the bin under the mouse, and its runs by state.
  hoverBand(e) {
    const o = this.view?.overview, r = this.canvas.getBoundingClientRect();
    if (!o || e.clientY - r.top > BAND_HEIGHT || e.clientX - r.left < this.label) { tooltip(null); return; }
    const step = (o.to - o.from) / o.bins;
    const b = Math.min(o.bins - 1, Math.floor((this.timeAt(e.clientX) - o.from) / step));
    const decimals = stepDecimals(step);
    const counts = BAND_ORDER.filter(s => o.alive[s] && o.alive[s][b]).map(s => `${s} ${o.alive[s][b]}`);
    tooltip(`${fmtClock(o.from + b * step, decimals)} – ${fmtClock(o.from + (b + 1) * step, decimals)}\n` +
            (counts.length ? counts.join('\n') : 'no job'), e.clientX, e.clientY);
  }
  dragTo(e) {
    if (!this.drag) return;
    this.drag.to = e.clientX;
    const r = this.canvas.getBoundingClientRect(), wrap = this.canvas.parentNode;
    const a = Math.max(this.label, Math.min(this.drag.from, this.drag.to) - r.left);
    const b = Math.min(this.width - RIGHT, Math.max(this.drag.from, this.drag.to) - r.left);
    this.selection.hidden = Math.abs(this.drag.to - this.drag.from) < 4;
    Object.assign(this.selection.style, {left: a + 'px', width: Math.max(0, b - a) + 'px',
      top: wrap.scrollTop + 'px', height: Math.min(wrap.clientHeight, parseFloat(this.canvas.style.height)) + 'px'});
  }
  // A drag zooms into the time it went across; a click opens the job clicked.
  drop(e) {
    const drag = this.drag;
    if (!drag) return;
    this.drag = null;
    this.selection.hidden = true;
    if (Math.abs(e.clientX - drag.from) >= 4) {
      const a = this.timeAt(Math.min(drag.from, e.clientX)), b = this.timeAt(Math.max(drag.from, e.clientX));
      if (b - a >= 0.01) this.onZoom(a, b);
    } else if (Array.isArray(this.view?.jobs)) {
      const j = this.at(e);
      if (j) this.onClick(j);
    }
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
// of the last one, not from its end, while isRunning(data) of the data on
// show; else every REFRESH_IDLE ms), so what became searchable is shown
// within about a second plus one refresh, however long a refresh takes; a
// slow server still gets REFRESH_GAP ms of rest between two. When load()
// answers {unchanged: true} (the store has nothing new for what the page
// shows, which stays) QUIET_GRACE times in a row, the period doubles at each
// next one, up to REFRESH_IDLE (1, 1, 1, 2, 4, 8, 10 s); the first change
// brings it back to REFRESH_RUNNING. The grace keeps what follows a change
// within a second (on the 10,000-job benchmark, a job started after the last
// one showed 2.2 s after it was searchable when the period doubled at once:
// the refresh just before found nothing new).
// Until the first answer came, an error is shown in place of the page (its
// parts are hidden, not removed: they are what later answers fill in).
function livePage(load, render, isRunning) {
  let timer = null, stopped = false, first = true, errorBox = null, shown = null, quiet = 0;
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
      if (data.unchanged && shown) quiet++;
      else {
        render(data, first);
        shown = data;
        first = false;
        quiet = 0;
      }
      setLive(true, 'updated ' + fmtClock(Date.now() / 1000), started);
      const period = isRunning(shown) ?
        Math.min(REFRESH_RUNNING * 2 ** Math.max(0, quiet - QUIET_GRACE), REFRESH_IDLE) : REFRESH_IDLE;
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
const active = wf => wf.stats.jobs.by_state.running + wf.stats.jobs.by_state.queued > 0;

// The workflow page asks for what it shows: the workflow (counts,
// statistics, charts, the timeline's overview; its runs when they are few),
// then the page of the jobs table and, when the timeline is zoomed, that
// window; a refresh sends the cursor of the last answer and gets
// {unchanged: true} when nothing changed, in which case it asks nothing more.
function workflowPage(uuid) {
  const head = el('div', {}), cards = el('div', {class: 'cards'});
  let zoom = null, shown = null;  // zoom: the window of the timeline on show; shown: the last workflow answer
  const askWindow = () => api(`workflows/${uuid}/timeline?from=${zoom.from.toFixed(3)}&to=${zoom.to.toFixed(3)}&bins=${gantt.bins()}`);
  const drawTimeline = view => {
    if (zoom && view) gantt.draw(view, view.now, true);
    else if (!zoom && shown) gantt.draw(shown, shown.now, false);
  };
  const gantt = new Gantt(j => { location.hash = jobHref(uuid, j.id); },
    async (from, to) => {
      const asked = zoom = {from, to};
      try {
        const view = await askWindow();
        if (zoom === asked) drawTimeline(view);
      } catch (e) { setLive(false, e.message); }
    },
    () => { zoom = null; drawTimeline(null); });
  const charts = ['cpu', 'rss', 'read', 'write'].map(m => new ChartBox(m));
  const pegasus = el('div', {}), transformations = el('div', {}), hosts = el('div', {});
  const anomalies = el('div', {}), io = el('div', {}), jobs = jobsTable(uuid);
  show(head, cards, el('h2', {}, 'Jobs over time'), gantt.node,
       el('h2', {}, 'CPU, memory and I/O'), el('div', {class: 'charts'}, charts.map(c => c.node)),
       pegasus, el('h2', {}, 'By transformation'), transformations, el('h2', {}, 'By host'), hosts,
       el('h2', {}, 'Anomalies'), anomalies, el('h2', {}, 'I/O: Darshan and transfers'), io,
       el('h2', {}, 'Jobs'), jobs.node);
  // the charts come with the workflow: its rows are read once for both
  const metrics = charts.map(c => c.metric).join(',');
  let cursor = null;
  return livePage(async () => {
    const wf = await api(`workflows/${uuid}?series=${metrics}&bins=${gantt.bins()}` +
                         (cursor ? '&since=' + encodeURIComponent(cursor) : ''));
    if (wf.unchanged) return wf;
    const zoomed = zoom;
    const [page, view] = await Promise.all([jobs.fetch(), zoomed ? askWindow() : null]);
    cursor = wf.cursor;
    return {wf, series: charts.map(c => wf.series[c.metric]), page, view: zoom === zoomed ? view : null};
  }, ({wf, series, page, view}) => {
    shown = wf;
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
    drawTimeline(view);
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
    ], wf.anomalies) : el('p', {class: 'muted'}, 'None.'),
      anomaliesLeftOut(wf));
    fill(io, ioCards(wf.io));
    jobs.show(page);
  }, ({wf}) => active(wf));
}

// What the anomalies table leaves out: a workflow's answer lists the first
// of each kind and counts them all.
function anomaliesLeftOut(wf) {
  const counts = Object.entries(wf.anomaly_counts).filter(([, n]) => n > 0);
  if (wf.anomalies.length === counts.reduce((sum, [, n]) => sum + n, 0)) return null;
  const failed = wf.anomaly_counts.failed > wf.anomalies.filter(a => a.kind === 'failed').length;
  return el('p', {class: 'muted'}, 'The first of each kind are listed, of ' +
    counts.map(([kind, n]) => `${n} ${kind === 'outlier' ? 'outliers' : kind}`).join(', ') + ' in all.' +
    (failed ? ' The jobs table lists every failed job: type "failed" in its filter.' : ''));
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
  return new RunsTable([
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
  'jobs', query => api(`workflows/${uuid}/jobs?${query}`));
}

function jobPage(uuid, id) {
  const head = el('div', {}), facts = el('div', {class: 'panel kv'});
  const charts = ['cpu', 'rss', 'read', 'write', 'threads'].map(m => new ChartBox(m));
  const darshan = el('div', {}), transfers = el('div', {}), events = el('div', {});
  const custom = el('div', {class: 'charts'}), customNote = el('p', {class: 'muted'});
  const customCharts = new Map();  // name -> CustomChart, kept across refreshes
  show(head, facts, el('h2', {}, 'CPU, memory, I/O and threads'), el('div', {class: 'charts'}, charts.map(c => c.node)),
       el('h2', {}, 'Custom metrics'), customNote, custom,
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
    const names = Object.keys(job.metrics).sort();
    for (const name of names) {
      if (!customCharts.has(name)) {
        customCharts.set(name, new CustomChart(name));
        custom.append(customCharts.get(name).node);
      }
      customCharts.get(name).update(job.metrics[name]);
    }
    customNote.textContent = !names.length ? 'None (pano-emit, lib/metric.h, or the Python package send them).' :
      job.metrics_left_out ? 'The newest 2,000 values of the job; older ones are in its events.' : '';
    customNote.hidden = !customNote.textContent;
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
