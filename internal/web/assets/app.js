// ollie web: the page's only script. It draws what the server sends and
// sends what the person does; all HTML it inserts was rendered and
// sanitized on the server, every other string goes in as text.
'use strict';

const csrf = document.querySelector('meta[name=csrf]').content;
// base is the secret path every URL of the server starts with.
const base = document.documentElement.dataset.base;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

async function post(url, data) {
  const r = await fetch(base + url, {
    method: 'POST', credentials: 'same-origin',
    headers: {'Content-Type': 'application/json', 'X-Ollie-CSRF': csrf},
    body: JSON.stringify(data || {}),
  });
  let j;
  try { j = await r.json(); } catch (e) { j = {ok: false, error: r.status + ' ' + r.statusText}; }
  return j;
}

function showErr(id, msg) {
  const e = document.getElementById(id);
  if (!e) return;
  e.textContent = msg || '';
  e.hidden = !msg;
}

function fmtMs(ms) {
  if (ms < 1000) return Math.round(ms) + ' ms';
  if (ms < 60000) return (ms / 1000).toFixed(1) + ' s';
  return Math.floor(ms / 60000) + ' m ' + Math.round((ms % 60000) / 1000) + ' s';
}

// stream opens a WebSocket to path (or the path a function gives) and calls on[event](data) for each
// message; when it breaks it is opened again, calling on.open first.
// (WebSockets rather than EventSource: a browser holds at most six
// HTTP/1.1 connections to a host, and each open page would hold one.)
function stream(path, on) {
  let closed = false, delay = 500;
  const open = () => {
    const ws = new WebSocket('ws://' + location.host + base + (typeof path === 'function' ? path() : path));
    ws.addEventListener('open', () => { delay = 500; if (on.open) on.open(); });
    ws.addEventListener('message', (m) => {
      const msg = JSON.parse(m.data);
      if (on[msg.e]) on[msg.e](msg.d);
    });
    ws.addEventListener('close', () => {
      if (closed) return;
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    });
    return ws;
  };
  let ws = open();
  return {close: () => { closed = true; ws.close(); }};
}

// ---- the session list ----

function rowCells(r) {
  const tr = el('tr');
  tr.dataset.id = r.id;
  const a = el('a', '', r.name || r.id);
  a.href = base + '/s/' + encodeURIComponent(r.id);
  const td = el('td'); td.append(a); tr.append(td);
  const st = el('td'); st.append(el('span', 'state s-' + r.state.replace(/\s+/g, '-'), r.state)); tr.append(st);
  tr.append(el('td', '', r.agent));
  tr.append(el('td', '', (r.backend + ' ' + r.model).trim()));
  tr.append(el('td', 'num', r.cost));
  tr.append(el('td', 'num', r.ctx));
  tr.append(el('td', 'dim', r.cwd));
  return tr;
}

// listPage keeps the list live. The HTML holds the first screenful of
// rows (newest first); the stream's first message is the whole list,
// whose rows the page draws a chunk per task, so the page is usable at
// once and stays so while a list of thousands fills in. Rows are kept in
// order (newest first); the drawn ones are always a prefix of it.
function listPage() {
  const tbody = document.querySelector('#sessions tbody');
  const count = document.getElementById('count');
  let order = []; // ids, newest first
  const data = new Map(); // id -> row, for every session
  const drawn = new Map(); // id -> tr, for the drawn prefix of order
  for (const tr of tbody.children) { order.push(tr.dataset.id); drawn.set(tr.dataset.id, tr); }
  const recount = () => { count.textContent = data.size || order.length; };
  let filling = 0;
  const fill = () => {
    filling = 0;
    const frag = document.createDocumentFragment();
    for (const id of order.slice(drawn.size, drawn.size + 100)) {
      const tr = rowCells(data.get(id));
      drawn.set(id, tr);
      frag.append(tr);
    }
    tbody.append(frag);
    if (drawn.size < order.length) filling = setTimeout(fill, 0);
  };
  stream('/events/list', {list: (msg) => {
    if (msg.op === 'all') {
      clearTimeout(filling);
      order = []; data.clear(); drawn.clear();
      for (const r of msg.rows || []) { order.push(r.id); data.set(r.id, r); }
      const frag = document.createDocumentFragment();
      for (const id of order.slice(0, tbody.children.length || 50)) {
        const tr = rowCells(data.get(id)); drawn.set(id, tr); frag.append(tr);
      }
      tbody.replaceChildren(frag);
      if (drawn.size < order.length) filling = setTimeout(fill, 0);
    } else if (msg.op === 'set') {
      const r = msg.row, old = drawn.get(r.id);
      if (!data.has(r.id)) order.unshift(r.id);
      data.set(r.id, r);
      if (old) { const tr = rowCells(r); old.replaceWith(tr); drawn.set(r.id, tr); }
      else if (order[0] === r.id) { const tr = rowCells(r); tbody.prepend(tr); drawn.set(r.id, tr); }
    } else if (msg.op === 'del') {
      const old = drawn.get(msg.id);
      if (old) old.remove();
      drawn.delete(msg.id);
      if (data.delete(msg.id)) order = order.filter((id) => id !== msg.id);
    }
    recount();
  }});
  const form = document.getElementById('newform');
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const f = new FormData(form), data = {};
    for (const [k, v] of f.entries()) data[k[0].toUpperCase() + k.slice(1)] = v;
    const j = await post('/api/new', data);
    if (!j.ok) { showErr('newerr', j.error); return; }
    location.href = base + '/s/' + encodeURIComponent(j.id);
  });
}

// ---- one session ----

function sessionPage(root) {
  const id = root.dataset.id;
  const chat = document.getElementById('chat');
  const stateEl = document.getElementById('state');
  const prompt = document.getElementById('prompt');
  const blocks = [];
  const calls = []; // tool_end of each call, in order
  const events = [];
  let ready = false;

  const nearBottom = () => window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;

  // drawBlock draws a block whole (m.h, rendered and sanitized by the
  // server), or appends the text a streaming block grew by (m.t) to its
  // live tail, as text: one chunk costs the DOM only its own length.
  function drawBlock(m) {
    let b = blocks[m.i];
    if (m.h === undefined) {
      if (!b) return; // a tail always follows its block drawn whole
      let live = b.querySelector('.live');
      if (!live) {
        const mds = b.querySelectorAll('.md');
        live = el('span', 'live');
        (mds.length ? mds[mds.length - 1] : b).append(live);
      }
      live.append(m.t);
      return;
    }
    let open = false;
    if (!b) {
      b = el('div', 'block k-' + m.k);
      blocks[m.i] = b;
      chat.append(b);
    } else {
      const d = b.querySelector('details');
      open = d && d.open;
      b.className = 'block k-' + m.k;
    }
    b.innerHTML = m.h; // rendered and sanitized by the server
    if (open) b.querySelector('details').open = true;
    const c = b.querySelector('details.call');
    if (c) callMeta(c);
  }

  function callMeta(d) {
    const n = +d.dataset.call, e = calls[n];
    const meta = d.querySelector('.meta');
    if (!meta || !e) return;
    const code = e.data.exit_code, failed = e.data.failed;
    meta.replaceChildren(
      el('span', 'badge ' + (failed || code ? 'bad' : 'good'), code ? 'exit ' + code : failed ? 'failed' : 'exit 0'),
      el('span', 'dim', ' ' + fmtMs(e.data.ms || 0)));
  }

  function setState(s) {
    stateEl.textContent = s;
    stateEl.className = 'state s-' + s.replace(/\s+/g, '-');
    document.getElementById('stop').disabled = s === 'idle';
  }

  function drawAsks(list) {
    const box = document.getElementById('asks');
    box.replaceChildren();
    for (const a of list) {
      const card = el('div', 'ask');
      card.dataset.n = a.n;
      card.append(el('div', 'asktitle', 'Consent needed · request ' + a.n));
      card.append(el('pre', 'asktext', a.text));
      const allow = el('button', 'primary', 'Allow');
      const deny = el('button', 'danger', 'Deny');
      allow.dataset.answer = 'allow'; deny.dataset.answer = 'deny';
      for (const b of [allow, deny]) {
        b.type = 'button';
        b.addEventListener('click', async () => {
          allow.disabled = deny.disabled = true;
          const j = await post('/api/ask/' + encodeURIComponent(id) + '/' + encodeURIComponent(a.n), {Text: b.dataset.answer});
          if (!j.ok) { showErr('err', j.error); allow.disabled = deny.disabled = false; return; }
          card.remove();
        });
      }
      const btns = el('div', 'pbtns'); btns.append(allow, deny); card.append(btns);
      box.append(card);
    }
  }

  // The page sticks to the bottom while it is there: a scroll (the
  // person's or its own) says whether it is, and the scroll to the new
  // bottom waits for the next frame, so a chunk forces no layout and a
  // burst of them lays the page out once.
  let atBottom = true, scrolling = false;
  window.addEventListener('scroll', () => { atBottom = nearBottom(); }, {passive: true});
  function scrollLater() {
    if (scrolling || !atBottom) return;
    scrolling = true;
    requestAnimationFrame(() => {
      scrolling = false;
      if (atBottom) window.scrollTo(0, document.body.scrollHeight);
    });
  }

  let drawTimer = 0;
  function later() {
    if (!drawTimer) drawTimer = setTimeout(() => { drawTimer = 0; drawTurns(); }, 100);
  }

  // turns groups the events by turn.
  function turns() {
    const out = [];
    let t = null;
    for (const e of events) {
      if (e.type === 'turn_start') { t = {start: Date.parse(e.time), segs: [], tokIn: 0, tokOut: 0, usd: 0, end: 0}; out.push(t); continue; }
      if (!t) continue;
      const at = Date.parse(e.time);
      if (e.type === 'state') {
        const last = t.segs[t.segs.length - 1];
        if (last && !last.end) last.end = at;
        const s = e.data.state;
        if (s !== 'idle' && s !== 'error') t.segs.push({kind: s, start: at, end: 0});
      } else if (e.type === 'usage') {
        t.tokIn += (e.data.input || 0) + (e.data.cache_read || 0) + (e.data.cache_write || 0);
        t.tokOut += e.data.output || 0;
      } else if (e.type === 'cost') {
        t.usd += e.data.usd || 0;
      } else if (e.type === 'turn_end') {
        t.end = t.start + (e.data.ms || (at - t.start));
        const last = t.segs[t.segs.length - 1];
        if (last && !last.end) last.end = at;
        t = null;
      }
    }
    return out;
  }

  function drawTurns() {
    const ts = turns().slice(-12);
    const tl = document.getElementById('timeline');
    const tok = document.getElementById('tokens');
    tl.replaceChildren(); tok.replaceChildren();
    const now = Date.now();
    let maxTok = 1;
    for (const t of ts) maxTok = Math.max(maxTok, t.tokIn + t.tokOut);
    ts.forEach((t, i) => {
      const end = t.end || now, total = Math.max(1, end - t.start);
      const line = el('div', 'turn');
      line.append(el('div', 'tlabel', 'turn ' + (turns().length - ts.length + i + 1) + ' · ' + fmtMs(total) + (t.end ? '' : ' …')));
      const bar = el('div', 'tbar');
      for (const s of t.segs) {
        const seg = el('div', 'seg g-' + s.kind.replace(/\s+/g, '-'));
        const d = (s.end || now) - s.start;
        seg.style.width = Math.max(0.5, 100 * d / total) + '%';
        seg.title = s.kind + ' ' + fmtMs(d);
        bar.append(seg);
      }
      line.append(bar);
      tl.append(line);
      const tr = el('div', 'turn');
      tr.append(el('div', 'tlabel', 'in ' + t.tokIn + ' · out ' + t.tokOut + ' · $' + t.usd.toFixed(4)));
      const tb = el('div', 'tbar');
      const a = el('div', 'seg g-in'); a.style.width = (100 * t.tokIn / maxTok) + '%'; a.title = 'input ' + t.tokIn;
      const b = el('div', 'seg g-out'); b.style.width = (100 * t.tokOut / maxTok) + '%'; b.title = 'output ' + t.tokOut;
      tb.append(a, b); tr.append(tb); tok.append(tr);
    });
    if (!ts.length) { tl.append(el('p', 'dim', 'no turns yet')); }
  }

  const es = stream('/events/s/' + encodeURIComponent(id), {
    // A stream opened again sends the blocks from the start.
    open: () => { blocks.length = 0; calls.length = 0; events.length = 0; chat.replaceChildren(); ready = false; },
    chat: (list) => {
      if (ready) scrollLater();
      for (const b of list) drawBlock(b);
    },
    ready: () => { ready = true; window.scrollTo(0, document.body.scrollHeight); root.dataset.ready = '1'; },
    state: setState,
    cost: (c) => {
      document.getElementById('cost').textContent = c.cost ? '$' + c.cost.replace(/^\$/, '') : '';
      document.getElementById('ctx').textContent = c.ctx ? 'context ' + c.ctx : '';
    },
    asks: drawAsks,
    events: (list) => {
      for (const e of list) {
        events.push(e);
        if (e.type === 'tool_end') {
          calls.push(e);
          const d = chat.querySelector('details.call[data-call="' + (calls.length - 1) + '"]');
          if (d) callMeta(d);
        }
      }
      later();
    },
    gone: () => { setState('ended'); es.close(); },
  });

  const form = document.getElementById('promptform');
  async function send(op) {
    const text = prompt.value;
    if (!text.trim()) return;
    const j = await post('/api/s/' + encodeURIComponent(id) + '/' + op, {Text: text});
    if (!j.ok) { showErr('err', j.error); return; }
    showErr('err', '');
    prompt.value = '';
  }
  form.addEventListener('submit', (ev) => { ev.preventDefault(); send('prompt'); });
  prompt.addEventListener('keydown', (ev) => {
    if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send('prompt'); }
  });
  for (const b of root.querySelectorAll('button[data-op]')) {
    b.addEventListener('click', async () => {
      const op = b.dataset.op;
      if (op === 'queue') { send('queue'); return; }
      let data = {};
      if (op === 'rename') {
        const name = window.prompt('New name', document.getElementById('sname').textContent);
        if (!name) return;
        data = {Text: name.trim()}; // as the server writes it
      }
      if (op === 'end' && !window.confirm('End this session? Its transcript is saved in tr/.')) return;
      const j = await post('/api/s/' + encodeURIComponent(id) + '/' + op, data);
      if (!j.ok) { showErr('err', j.error); return; }
      showErr('err', '');
      if (op === 'rename') {
        document.getElementById('sname').textContent = data.Text;
        document.title = data.Text + ' ' + id + ' · ollie';
      }
      if (op === 'end') location.href = base + '/';
    });
  }
  setInterval(() => { if (events.length && stateEl.textContent !== 'idle') drawTurns(); }, 1000);
}

// ---- the editor ----

function editPage(form) {
  const saved = document.getElementById('saved');
  const text = form.querySelector('textarea');
  text.addEventListener('input', () => { saved.textContent = 'unsaved'; });
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let path = form.dataset.path, create = false;
    if (form.dataset.new) { path = form.dataset.dir + '/' + form.querySelector('input[name=name]').value.trim(); create = true; }
    const j = await post('/api/put', {Path: path, Text: text.value, Create: create});
    if (!j.ok) { showErr('err', j.error); saved.textContent = 'not saved'; return; }
    showErr('err', '');
    saved.textContent = 'saved';
    if (create) location.href = base + '/edit?p=' + encodeURIComponent(j.path);
  });
}

document.addEventListener('DOMContentLoaded', () => {
  const s = document.getElementById('session');
  if (s) sessionPage(s);
  if (document.getElementById('sessions')) listPage();
  const e = document.getElementById('editform');
  if (e) editPage(e);
});
