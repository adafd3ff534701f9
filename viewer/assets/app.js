// lllm view: the single-page viewer of run logs. Plain JavaScript, no
// build step. Everything from the log is put on the page as text (never as
// HTML), and every list is fetched in pages from the server's JSON API.
'use strict';

const NODE_PAGE = 100;     // dialogs per tree page
const MSG_PAGE = 50;       // messages per transcript page
const MAX_RENDERED = 400;  // messages kept on the page while scrolling
const LIVE_MS = 1000;      // how often a running run is polled
const RUNS_MS = 3000;      // how often the runs list is polled while a run is going

// ---- helpers ---------------------------------------------------------------

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

async function api(path) {
  const r = await fetch(path, { cache: 'no-store' });
  let body = null;
  try { body = await r.json(); } catch (_) { /* not JSON */ }
  if (!r.ok) throw new Error((body && body.error) || `${r.status} ${r.statusText}`);
  return body;
}

const enc = encodeURIComponent;
const short = (id) => (id || '').slice(0, 8);
// cutText says how many replies were cut at max_tokens: "1 reply cut at max_tokens".
const cutText = (n) => `${n} repl${n > 1 ? 'ies' : 'y'} cut at max_tokens`;

// fill replaces the children of e, skipping empty ones.
function fill(e, ...children) {
  e.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false)
    .map((c) => (c instanceof Node ? c : document.createTextNode(String(c)))));
  return e;
}

function showError(err) {
  const box = document.getElementById('error');
  if (!err) { box.hidden = true; box.textContent = ''; return; }
  box.hidden = false;
  box.textContent = String(err.message || err);
}

function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? s : d.toLocaleString();
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${Math.round(s - 60 * m)} s`;
}

function fmtUSD(x) {
  if (!x) return '$0';
  if (x >= 0.01) return '$' + x.toFixed(2);
  return '$' + x.toPrecision(2);
}

function tokens(c) {
  if (!c) return 0;
  return (c.input_tokens || 0) + (c.output_tokens || 0);
}

function jsonText(v) {
  if (v === undefined || v === null) return '';
  return typeof v === 'string' ? v : JSON.stringify(v, null, 2);
}

function statusBadge(status) {
  return el('span', { class: `status status-${status}`, text: status });
}

function setCrumbs(...items) {
  const nav = document.getElementById('crumbs');
  nav.replaceChildren();
  items.filter(Boolean).forEach((it, i) => {
    if (i > 0) nav.append(' / ');
    nav.append(it.href ? el('a', { href: it.href, text: it.text }) : it.text);
  });
}

// ---- routing ---------------------------------------------------------------

let page = null; // the current view; has stop() to end its timers

function route() {
  showError(null);
  let parts;
  try {
    parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  } catch (err) {
    // A link cut short or mistyped (a broken %-escape): say so, rather
    // than leave the page before it showing under the new address.
    if (page) page.stop();
    page = null;
    setCrumbs();
    document.getElementById('app').replaceChildren();
    showError(`The address ${location.hash} is not a link of this viewer (${err.message}): "lllm view" above lists the runs.`);
    return;
  }
  let next;
  if (parts[0] === 'run' && parts[1]) {
    if (page instanceof RunView && page.runId === parts[1]) {
      page.select(parts[2] === 'dialog' ? parts[3] : null).catch(showError);
      return;
    }
    next = new RunView(parts[1], parts[2] === 'dialog' ? parts[3] : null);
  } else {
    next = new RunsView();
  }
  if (page) page.stop();
  page = next;
  page.start().catch(showError);
}

window.addEventListener('hashchange', route);
window.addEventListener('DOMContentLoaded', route);

// ---- runs list -------------------------------------------------------------

const RUN_COLUMNS = [
  { key: 'run_id', title: 'Run', value: (r) => r.run_id },
  { key: 'tactic', title: 'Tactic', value: (r) => r.tactic || '' },
  { key: 'status', title: 'Status', value: (r) => r.status },
  { key: 'started', title: 'Started', value: (r) => r.started || '' },
  { key: 'duration', title: 'Duration', num: true, value: (r) => r.duration_ms ?? -1 },
  { key: 'dialogs', title: 'Dialogs', num: true, value: (r) => r.totals ? r.totals.dialogs : -1 },
  { key: 'messages', title: 'Messages', num: true, value: (r) => r.totals ? r.totals.messages : -1 },
  { key: 'calls', title: 'Model calls', num: true, value: (r) => r.totals ? r.totals.model_calls : -1 },
  { key: 'tokens', title: 'Tokens', num: true, value: (r) => r.totals ? tokens(r.totals.cost) : -1 },
  { key: 'cost', title: 'Cost', num: true, value: (r) => r.totals ? (r.totals.cost.usd || 0) : -1 },
];

class RunsView {
  constructor() {
    this.runs = [];
    this.sort = { key: 'started', dir: -1 };
    this.filter = { tactic: '', status: '', text: '' };
    this.timer = null;
  }

  async start() {
    setCrumbs({ text: 'runs' });
    document.getElementById('live').hidden = true;
    const app = document.getElementById('app');
    this.tacticSel = el('select', { id: 'filter-tactic', onchange: (e) => { this.filter.tactic = e.target.value; this.render(); } });
    this.statusSel = el('select', { id: 'filter-status', onchange: (e) => { this.filter.status = e.target.value; this.render(); } });
    this.textIn = el('input', { id: 'filter-text', type: 'search', placeholder: 'run id or label', oninput: (e) => { this.filter.text = e.target.value.toLowerCase(); this.render(); } });
    this.count = el('span', { class: 'muted', id: 'runs-count' });
    this.table = el('table', { id: 'runs-table' });
    this.root = el('span', { class: 'muted' });
    app.replaceChildren(el('section', { id: 'runs' },
      el('div', { id: 'filters' },
        el('label', {}, 'Tactic ', this.tacticSel),
        el('label', {}, 'Status ', this.statusSel),
        this.textIn, this.count, this.root),
      this.table));
    await this.load();
  }

  stop() { clearTimeout(this.timer); this.stopped = true; }

  async load() {
    try {
      const data = await api('api/runs');
      if (this.stopped) return;
      this.runs = data.runs;
      this.root.textContent = `under ${data.root}`;
      this.fillSelect(this.tacticSel, 'all tactics', this.runs.map((r) => r.tactic || ''), this.filter.tactic);
      this.fillSelect(this.statusSel, 'all statuses', this.runs.map((r) => r.status), this.filter.status);
      this.render();
      showError(null);
    } catch (err) {
      showError(err);
    }
    if (!this.stopped && this.runs.some((r) => r.status === 'running')) {
      this.timer = setTimeout(() => this.load(), RUNS_MS);
    }
  }

  fillSelect(sel, all, values, current) {
    const opts = [...new Set(values.filter((v) => v !== ''))].sort();
    sel.replaceChildren(el('option', { value: '', text: all }),
      ...opts.map((v) => el('option', { value: v, text: v, selected: v === current })));
  }

  render() {
    const col = RUN_COLUMNS.find((c) => c.key === this.sort.key);
    const f = this.filter;
    const rows = this.runs.filter((r) =>
      (!f.tactic || r.tactic === f.tactic) &&
      (!f.status || r.status === f.status) &&
      (!f.text || r.run_id.toLowerCase().includes(f.text) ||
        Object.entries(r.labels || {}).some(([k, v]) => `${k}=${v}`.toLowerCase().includes(f.text))));
    rows.sort((a, b) => {
      const x = col.value(a), y = col.value(b);
      return (x < y ? -1 : x > y ? 1 : 0) * this.sort.dir;
    });
    const head = el('tr', {}, RUN_COLUMNS.map((c) => el('th', {
      class: [c.num ? 'num' : '', c.key === this.sort.key ? 'sorted' : '', c.key === this.sort.key && this.sort.dir > 0 ? 'asc' : ''].join(' ').trim() || null,
      dataset: { key: c.key },
      onclick: () => {
        this.sort = { key: c.key, dir: this.sort.key === c.key ? -this.sort.dir : (c.num || c.key === 'started' ? -1 : 1) };
        this.render();
      },
      text: c.title,
    })));
    const body = rows.map((r) => el('tr', { class: 'run-row', dataset: { run: r.run_id, tactic: r.tactic || '', status: r.status } },
      el('td', { class: 'mono' }, el('a', { class: 'run-link', href: `#/run/${enc(r.run_id)}`, text: r.run_id, title: r.dir })),
      el('td', { text: r.tactic || '' }),
      el('td', { title: r.error || null }, statusBadge(r.status)),
      el('td', { text: fmtTime(r.started) }),
      el('td', { class: 'num', text: fmtDuration(r.duration_ms) }),
      el('td', { class: 'num', text: r.totals ? r.totals.dialogs : '' }),
      el('td', { class: 'num', text: r.totals ? r.totals.messages : '' }),
      el('td', { class: 'num', text: r.totals ? r.totals.model_calls : '' }),
      el('td', { class: 'num', text: r.totals ? tokens(r.totals.cost) : '' }),
      el('td', { class: 'num', text: r.totals ? fmtUSD(r.totals.cost.usd) : '' })));
    this.table.replaceChildren(el('thead', {}, head), el('tbody', {}, body));
    this.count.textContent = `${rows.length} of ${this.runs.length} runs`;
  }
}

// ---- run page --------------------------------------------------------------

class RunView {
  constructor(runId, dialogId) {
    this.runId = runId;
    this.dialogId = dialogId || null;
    this.indexed = -1; // the run's indexed_bytes when last shown
    this.timer = null;
    this.nodes = new Map(); // dialog id -> tree item state
  }

  base() { return `api/runs/${enc(this.runId)}`; }

  async start() {
    setCrumbs({ text: 'runs', href: '#/' }, { text: this.runId });
    this.head = el('div', { id: 'run-head' });
    this.tree = el('div', { id: 'tree' });
    this.right = el('div', { id: 'right' });
    this.right.append(el('p', { class: 'muted', id: 'pick', text: 'Pick a dialog in the tree to read its transcript.' }));
    document.getElementById('app').replaceChildren(el('section', { id: 'run' },
      el('div', { id: 'left' }, this.head, this.tree), this.right));
    const run = await api(this.base());
    this.renderHead(run);
    this.rootList = this.makeList(null);
    this.tree.replaceChildren(this.rootList.ul);
    await this.loadList(this.rootList);
    if (this.dialogId) await this.select(this.dialogId);
    this.schedule(run);
  }

  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    if (this.transcript) this.transcript.stop();
    document.getElementById('live').hidden = true;
  }

  schedule(run) {
    this.indexed = run.indexed_bytes;
    const live = run.status === 'running';
    document.getElementById('live').hidden = !live;
    if (live && !this.stopped) this.timer = setTimeout(() => this.poll(), LIVE_MS);
  }

  async poll() {
    try {
      const run = await api(this.base());
      if (this.stopped) return;
      if (run.indexed_bytes !== this.indexed) {
        this.renderHead(run);
        await this.refreshList(this.rootList);
        if (this.transcript) await this.transcript.refresh();
      }
      showError(null);
      this.schedule(run);
    } catch (err) {
      showError(err);
      if (!this.stopped) this.timer = setTimeout(() => this.poll(), LIVE_MS * 3);
    }
  }

  renderHead(run) {
    const t = run.totals;
    const facts = el('div', { class: 'facts' },
      el('span', {}, 'tactic ', el('b', { text: run.tactic || '?' })),
      statusBadge(run.status),
      el('span', { text: `started ${fmtTime(run.started)}` }),
      run.duration_ms !== undefined ? el('span', { text: `took ${fmtDuration(run.duration_ms)}` }) : null,
      el('span', { id: 'run-counts', text: `${run.dialogs} dialogs · ${run.messages} messages · ${run.records} records` }),
      t ? el('span', { text: `${t.model_calls} model calls · ${tokens(t.cost)} tokens ${fmtUSD(t.cost.usd)}` }) : null);
    fill(this.head, 
      el('h2', { class: 'mono', text: run.run_id, title: run.dir }),
      facts,
      run.error ? el('div', { class: 'error', text: run.error }) : null,
      ...(run.warnings || []).map((w) => el('div', { class: 'warning', text: w })),
      run.task !== undefined ? el('details', {}, el('summary', { text: 'task' }), el('pre', { text: jsonText(run.task) })) : null,
      run.result !== undefined ? el('details', {}, el('summary', { text: 'result' }), el('pre', { text: jsonText(run.result) })) : null,
      run.config !== undefined ? el('details', {}, el('summary', { text: 'config' }), el('pre', { text: jsonText(run.config) })) : null);
  }

  // A list is the loaded children of one tree node (or the roots).
  makeList(parent) {
    return { parent, ul: el('ul', { role: parent ? 'group' : 'tree' }), items: [], total: 0, more: null };
  }

  async loadList(list, offset = 0) {
    const q = new URLSearchParams({ offset, limit: NODE_PAGE });
    if (list.parent) q.set('parent', list.parent);
    const p = await api(`${this.base()}/tree?${q}`);
    list.total = p.total;
    for (const n of p.nodes) this.addItem(list, n);
    this.renderMore(list);
  }

  async refreshList(list) {
    const q = new URLSearchParams({ offset: 0, limit: Math.max(list.items.length, NODE_PAGE) });
    if (list.parent) q.set('parent', list.parent);
    const p = await api(`${this.base()}/tree?${q}`);
    list.total = p.total;
    for (const n of p.nodes) {
      const it = this.nodes.get(n.id);
      if (it) this.updateItem(it, n); else this.addItem(list, n);
    }
    this.renderMore(list);
    for (const it of list.items) if (it.open && it.children) await this.refreshList(it.children);
  }

  renderMore(list) {
    if (list.more) list.more.remove();
    list.more = null;
    const left = list.total - list.items.length;
    if (left > 0) {
      list.more = el('li', {}, el('button', {
        class: 'more', text: `show ${Math.min(left, NODE_PAGE)} more of ${left}`,
        onclick: () => this.loadList(list, list.items.length).catch(showError),
      }));
      list.ul.append(list.more);
    }
  }

  addItem(list, n) {
    const it = { node: n, open: false, children: null };
    it.toggle = el('button', { class: 'toggle', 'aria-label': 'expand', onclick: () => this.toggle(it).catch(showError) });
    it.label = el('a', { class: 'node-label', href: `#/run/${enc(this.runId)}/dialog/${enc(n.id)}` });
    it.row = el('div', { class: 'node-row' }, it.toggle, it.label);
    it.li = el('li', { class: 'node', role: 'treeitem', dataset: { id: n.id } }, it.row);
    this.updateItem(it, n);
    if (list.more) list.ul.insertBefore(it.li, list.more); else list.ul.append(it.li);
    list.items.push(it);
    this.nodes.set(n.id, it);
    if (n.id === this.dialogId) it.row.classList.add('selected');
  }

  updateItem(it, n) {
    it.node = n;
    it.toggle.textContent = n.children > 0 ? (it.open ? '▾' : '▸') : '';
    it.toggle.disabled = n.children === 0;
    it.li.classList.toggle('failed', n.failed);
    const badges = [];
    if (n.parent_id) {
      badges.push(el('span', { class: 'badge', title: 'messages the fork started with; last_n and first_k', text: `split@${n.split_point}` + (n.last_n ? ` (last ${n.last_n}, first ${n.first_k})` : '') }));
    }
    if (n.outcome) {
      const cls = n.failed ? 'bad' : n.outcome === 'ok' ? 'good' : 'pending';
      const titles = {
        ok: 'working copy: its reply reached the dialog',
        retried: 'failed attempt: the reply did not parse and was retried',
        failed: 'failed attempt: its reply never reached the dialog',
        error: 'failed attempt: its model calls failed',
        pending: 'working copy: the run may still use it',
      };
      badges.push(el('span', { class: `badge ${cls} outcome`, title: titles[n.outcome], text: n.failed ? `✗ ${n.outcome}` : n.outcome }));
    }
    if (n.call_errors > 0) {
      badges.push(el('span', { class: 'badge bad call-errors', title: n.last_error || '', text: `${n.call_errors} failed call${n.call_errors > 1 ? 's' : ''}` }));
    }
    if (n.max_tokens_cut > 0) {
      badges.push(el('span', { class: 'badge warn max-tokens-cut', title: 'the model stopped at max_tokens (model_args): a reply is incomplete', text: cutText(n.max_tokens_cut) }));
    }
    fill(it.label, 
      el('span', { class: 'id mono', text: short(n.id) }), ' ',
      el('b', { text: n.owner }), ' ',
      n.alias ? el('span', { class: 'alias', text: n.alias }) : null, ' ',
      el('span', { class: 'muted', text: `${n.messages} msg` }), ' ',
      ...badges.flatMap((b) => [b, ' ']));
    if (n.children > 0) it.li.setAttribute('aria-expanded', String(it.open));
    else it.li.removeAttribute('aria-expanded');
  }

  async toggle(it) {
    if (it.node.children === 0) return;
    it.open = !it.open;
    if (it.open && !it.children) {
      it.children = this.makeList(it.node.id);
      it.li.append(it.children.ul);
      await this.loadList(it.children);
    }
    if (it.children) it.children.ul.hidden = !it.open;
    this.updateItem(it, it.node);
  }

  async expandTo(info) {
    for (const a of info.ancestors) {
      const it = this.nodes.get(a.id);
      if (it && !it.open) await this.toggle(it);
    }
  }

  async select(dialogId) {
    for (const it of this.nodes.values()) it.row.classList.toggle('selected', it.node.id === dialogId);
    this.dialogId = dialogId;
    if (this.transcript) this.transcript.stop();
    this.transcript = null;
    setCrumbs({ text: 'runs', href: '#/' }, { text: this.runId, href: `#/run/${enc(this.runId)}` }, dialogId ? { text: short(dialogId) } : null);
    if (!dialogId) {
      this.right.replaceChildren(el('p', { class: 'muted', id: 'pick', text: 'Pick a dialog in the tree to read its transcript.' }));
      return;
    }
    this.transcript = new Transcript(this, dialogId);
    const info = await this.transcript.start();
    if (info) await this.expandTo(info);
    const it = this.nodes.get(dialogId);
    if (it) it.row.classList.add('selected');
  }
}

// ---- transcript ------------------------------------------------------------

class Transcript {
  constructor(run, dialogId) {
    this.run = run;
    this.dialogId = dialogId;
    this.start_ = 0; // index of the first rendered message
    this.end = 0;    // index after the last rendered message
    this.total = 0;
    this.loading = false;
  }

  base() { return `${this.run.base()}/dialogs/${enc(this.dialogId)}`; }

  async start() {
    const right = this.run.right;
    this.headBox = el('div', { id: 'dialog-head' });
    this.jump = el('input', { id: 'jump', type: 'number', min: 0, placeholder: 'message #' });
    this.pager = el('div', { id: 'pager' },
      el('button', { id: 'first', text: 'first', onclick: () => this.goto(0) }),
      el('button', { id: 'last', text: 'last', onclick: () => this.goto(Math.max(0, this.total - MSG_PAGE)) }),
      this.jump, el('button', { id: 'go', text: 'go', onclick: () => this.goto(Number(this.jump.value) || 0) }),
      el('span', { class: 'muted', id: 'window' }));
    this.earlier = el('button', { id: 'load-earlier', text: 'load earlier messages', hidden: true, onclick: () => this.loadEarlier() });
    this.list = el('ol', { id: 'messages' });
    this.more = el('button', { id: 'load-more', text: 'load more', hidden: true, onclick: () => this.loadMore() });
    this.box = el('div', { id: 'transcript', dataset: { dialog: this.dialogId } }, this.headBox, this.pager, this.earlier, this.list, this.more);
    right.replaceChildren(this.box);
    right.scrollTop = 0;
    this.observer = new IntersectionObserver((es) => {
      if (es.some((e) => e.isIntersecting)) this.loadMore();
    }, { root: right, rootMargin: '600px' });
    this.observer.observe(this.more);
    try {
      const info = await api(this.base());
      if (this.stopped) return null;
      this.renderHead(info);
      await this.loadMore();
      return info;
    } catch (err) {
      this.list.replaceChildren(el('li', { class: 'error', text: String(err.message || err) }));
      return null;
    }
  }

  stop() {
    this.stopped = true;
    if (this.observer) this.observer.disconnect();
  }

  renderHead(info) {
    const n = info.node;
    this.total = n.messages;
    const path = info.ancestors.map((a) => el('a', { href: `#/run/${enc(this.run.runId)}/dialog/${enc(a.id)}`, text: `${short(a.id)} ${a.alias || a.owner}` }));
    fill(this.headBox, 
      el('h3', {}, el('span', { class: 'mono', text: short(n.id) }), ` ${n.owner}`, n.alias ? ` · ${n.alias}` : ''),
      el('div', { class: 'facts' },
        el('span', { class: 'mono', text: n.id }),
        el('span', { id: 'dialog-total', text: `${n.messages} messages (${n.own_messages} own)` }),
        n.parent_id ? el('span', {}, `fork at ${n.split_point}` + (n.last_n ? ` (first ${n.first_k} + last ${n.last_n} of ${n.parent_len})` : '') + ' of ', ...path.flatMap((p, i) => i ? [' / ', p] : [p])) : el('span', { text: 'root dialog' }),
        n.model_calls ? el('span', { text: `${n.model_calls} model calls` }) : null,
        n.outcome ? el('span', { class: n.failed ? 'badge bad' : 'badge', text: `attempt: ${n.outcome}` }) : null),
      n.call_errors ? el('div', { class: 'error', text: `${n.call_errors} model call${n.call_errors > 1 ? 's' : ''} failed on this dialog; last: ${n.last_error}` }) : null,
      n.max_tokens_cut ? el('div', { class: 'warning max-tokens-cut', text: `${cutText(n.max_tokens_cut)} on this dialog: the model stopped mid-answer (raise max_tokens in model_args for whole replies)` }) : null);
    this.updateWindow();
  }

  updateWindow() {
    const w = this.box.querySelector('#window');
    w.textContent = this.total ? `showing ${this.start_}–${Math.max(this.start_, this.end - 1)} of ${this.total}` : 'no messages';
    this.more.hidden = this.end >= this.total;
    this.earlier.hidden = this.start_ === 0;
  }

  async fetchPage(offset) {
    return api(`${this.base()}/messages?offset=${offset}&limit=${MSG_PAGE}`);
  }

  async loadMore() {
    if (this.loading || this.stopped || this.end >= this.total) return;
    this.loading = true;
    try {
      const p = await this.fetchPage(this.end);
      if (this.stopped) return;
      this.total = p.total;
      for (const m of p.messages) this.list.append(renderMessage(m, this.run.runId));
      this.end = p.next;
      // Keep the page light: drop the oldest rendered messages.
      while (this.list.children.length > MAX_RENDERED) {
        this.list.firstElementChild.remove();
        this.start_++;
      }
    } catch (err) {
      showError(err);
    } finally {
      this.loading = false;
      this.updateWindow();
    }
  }

  async loadEarlier() {
    if (this.loading || this.start_ === 0) return;
    this.loading = true;
    try {
      const from = Math.max(0, this.start_ - MSG_PAGE);
      const p = await this.fetchPage(from);
      const frag = document.createDocumentFragment();
      let last = from;
      for (const m of p.messages) {
        if (m.index >= this.start_) break;
        frag.append(renderMessage(m, this.run.runId));
        last = m.index + 1;
      }
      this.list.prepend(frag);
      this.start_ = from;
      if (last < this.start_) this.start_ = last;
      while (this.list.children.length > MAX_RENDERED) {
        this.list.lastElementChild.remove();
        this.end--;
      }
    } catch (err) {
      showError(err);
    } finally {
      this.loading = false;
      this.updateWindow();
    }
  }

  async goto(offset) {
    offset = Math.max(0, Math.min(offset, Math.max(0, this.total - 1)));
    this.list.replaceChildren();
    this.start_ = this.end = offset;
    this.run.right.scrollTop = 0;
    await this.loadMore();
  }

  // refresh follows a growing dialog: new messages are appended when the
  // end of the dialog is on the page.
  async refresh() {
    const atEnd = this.end >= this.total;
    const info = await api(this.base());
    if (this.stopped) return;
    this.renderHead(info);
    if (atEnd) await this.loadMore();
  }
}

function renderMessage(item, runId) {
  const li = el('li', { class: 'msg', dataset: { index: item.index } });
  if (item.error) {
    li.classList.add('bad');
    li.append(el('div', { class: 'msg-head' }, el('span', { class: 'idx', text: `#${item.index}` })),
      el('div', { class: 'error', text: item.error }));
    return li;
  }
  const m = item.message || {};
  // The role is the log's text, any string: an attribute takes it as it is.
  if (m.role) li.dataset.role = m.role;
  if (item.inherited) li.classList.add('inherited');
  const head = el('div', { class: 'msg-head' },
    el('span', { class: 'idx mono', text: `#${item.index}` }),
    el('span', { class: 'role', text: m.role }),
    m.name && m.name !== m.role ? el('span', { class: 'name', text: m.name }) : null,
    m.agent ? el('span', { class: 'agent', title: 'a guest agent wrote this turn', text: `agent ${m.agent}` }) : null,
    m.tool_call_id ? el('span', { class: 'mono', text: `result of ${m.tool_call_id}` }) : null,
    item.prompt ? el('span', { class: 'prompt', title: 'the prompt that rendered it', text: `prompt ${item.prompt}` }) : null,
    item.inherited ? el('a', { class: 'inherited-from', href: `#/run/${enc(runId)}/dialog/${enc(item.dialog)}`, title: 'a message this fork started with', text: `from ${short(item.dialog)}` }) : null,
    el('span', { class: 'muted', title: `record ${item.seq}`, text: fmtTime(item.ts) }));
  li.append(head);
  // The model's reasoning before its reply, folded: it can be long.
  const thoughts = (m.reasoning || []).map(r => r.text || (r.redacted ? '[redacted by the provider]' : '')).filter(Boolean);
  if (thoughts.length) {
    li.append(el('details', { class: 'reasoning' }, el('summary', { text: 'reasoning' }), el('pre', { text: thoughts.join('\n\n') })));
  }
  if (m.content) li.append(el('div', { class: 'content', text: m.content }));
  for (const p of m.parts || []) {
    if (p.type === 'image' && p.image) {
      const src = p.image.data ? `data:${p.image.mime || 'image/png'};base64,${p.image.data}` : p.image.url;
      if (src) li.append(el('img', { class: 'msg-image', src, alt: p.image.mime || 'image', loading: 'lazy', referrerpolicy: 'no-referrer' }));
    } else if (p.text) {
      li.append(el('div', { class: 'content part-text', text: p.text }));
    } else {
      li.append(el('div', { class: 'muted', text: `[${p.type} part]` }));
    }
  }
  for (const fc of m.function_calls || []) {
    li.append(el('div', { class: 'tool-call' },
      el('div', { class: 'mono call' }, `→ ${fc.name}(${fc.arguments ? JSON.stringify(fc.arguments) : ''})`, fc.id ? el('span', { class: 'muted', text: ` [${fc.id}]` }) : null),
      fc.result ? el('pre', { class: 'result', text: `← ${fc.result}` }) : null,
      fc.error ? el('pre', { class: 'call-error', text: `✗ ${fc.error}` }) : null));
  }
  if (m.parsed !== undefined) {
    li.append(el('details', { class: 'parsed' }, el('summary', { text: 'parsed output' }), el('pre', { text: jsonText(m.parsed) })));
  }
  const u = m.usage || {};
  const bits = [];
  if (m.model) bits.push(m.model);
  if (u.input_tokens) bits.push(`in ${u.input_tokens}`);
  if (u.cached_input_tokens) bits.push(`cached ${u.cached_input_tokens}`);
  if (u.cache_write_tokens) bits.push(`cache write ${u.cache_write_tokens}`);
  if (u.output_tokens) bits.push(`out ${u.output_tokens}`);
  if (u.reasoning_tokens) bits.push(`reasoning ${u.reasoning_tokens}`);
  if (m.usd) bits.push(fmtUSD(m.usd));
  if (bits.length) li.append(el('div', { class: 'usage', text: bits.join(' · ') }));
  if (m.metadata && Object.keys(m.metadata).length) {
    li.append(el('details', { class: 'extra' }, el('summary', { text: 'metadata' }), el('pre', { text: jsonText(m.metadata) })));
  }
  return li;
}
