/**
 * The console's page, its style and its script: three static texts (the page carries only its page
 * token and whether control is served). The script builds every element with `textContent`, never
 * with HTML from data, so a project path holding `<script>`, terminal escapes or a right-to-left
 * override is shown as the text it is. It refreshes every 2 s by short polling of the JSON API (no
 * reload), and asks for a confirmation on the page itself before any control is sent.
 */

/** The page; `pageToken` goes back with each control request, `readOnly` hides the controls. */
export function consolePage(pageToken: string, readOnly: boolean): string {
  // Both are ours (base64url and a boolean): nothing from a run or a plan is ever written here.
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="shardmove-page" content="${pageToken}">
<meta name="shardmove-read-only" content="${readOnly ? 'true' : 'false'}">
<title>shardmove console</title>
<link rel="stylesheet" href="/assets/console.css">
</head>
<body>
<header>
<h1>shardmove console</h1>
<p id="updated" role="status" aria-live="polite">loading…</p>
</header>
<nav id="runs" aria-label="Runs"></nav>
<main id="run"></main>
<script src="/assets/console.js"></script>
</body>
</html>
`;
}

export const CONSOLE_CSS = `:root { color-scheme: light dark; --line: #8884; --warn: #b36b00; --alarm: #c0262d; --ok: #2b7a2b; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; padding: 0.75rem; max-width: 72rem; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 0 1rem; }
h1 { font-size: 1.2rem; margin: 0.25rem 0; }
h2 { font-size: 1.1rem; margin: 1rem 0 0.5rem; overflow-wrap: anywhere; }
h3 { font-size: 1rem; margin: 1rem 0 0.25rem; }
#updated { margin: 0; color: GrayText; font-size: 0.9rem; }
nav ul { list-style: none; padding: 0; margin: 0.5rem 0; display: flex; flex-wrap: wrap; gap: 0.5rem; }
nav a { display: block; padding: 0.35rem 0.6rem; border: 1px solid var(--line); border-radius: 0.4rem; text-decoration: none; color: inherit; overflow-wrap: anywhere; }
nav a[aria-current="true"] { border-color: currentColor; font-weight: 600; }
.headline { font-weight: 700; font-size: 1.15rem; overflow-wrap: anywhere; }
.tone-warn { color: var(--warn); } .tone-alarm { color: var(--alarm); } .tone-ok { color: var(--ok); }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 0.15rem 1rem; margin: 0.5rem 0; }
.facts dt { color: GrayText; } .facts dd { margin: 0; overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; min-width: 100%; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 0.25rem 0.5rem; text-align: right; white-space: nowrap; }
th:first-child, td:first-child, th:nth-child(2), td:nth-child(2) { text-align: left; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; font-size: 0.85rem; border: 1px solid var(--line); border-radius: 0.4rem; padding: 0.5rem; }
.controls { display: flex; flex-wrap: wrap; gap: 0.5rem; align-items: center; margin: 0.75rem 0; }
button, input { font: inherit; padding: 0.35rem 0.7rem; border-radius: 0.4rem; border: 1px solid var(--line); }
button { cursor: pointer; } button:focus-visible, input:focus-visible, a:focus-visible { outline: 3px solid Highlight; outline-offset: 1px; }
input { width: 6rem; }
.confirm { border: 2px solid var(--warn); border-radius: 0.4rem; padding: 0.5rem; margin: 0.5rem 0; }
.error { color: var(--alarm); overflow-wrap: anywhere; }
`;

/** Plain browser script (no build step, no module loader): every string from a run goes through textContent. */
export const CONSOLE_JS = `'use strict';
(function () {
  var meta = function (name) { var m = document.querySelector('meta[name="' + name + '"]'); return m ? m.getAttribute('content') : ''; };
  var PAGE = meta('shardmove-page');
  var READ_ONLY = meta('shardmove-read-only') === 'true';
  var INTERVAL = 2000;
  var runs = [];
  var confirming = null;
  var message = null;

  // As a terminal shows them (src/report/escape.ts): a control character, or a bidi override that
  // would reorder what a line says, becomes visible \\uXXXX text.
  var CONTROL = /[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]/g;
  function safe(text) {
    return text.replace(CONTROL, function (c) { return '\\\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'); });
  }

  function el(tag, props, children) {
    var e = document.createElement(tag);
    Object.keys(props || {}).forEach(function (k) {
      var v = props[k];
      if (v === null || v === undefined) return;
      if (k === 'text') e.textContent = safe(String(v));
      else if (k === 'onclick') e.addEventListener('click', v);
      else e.setAttribute(k, String(v));
    });
    (children || []).forEach(function (c) { if (c !== null && c !== undefined) e.append(c); });
    return e;
  }

  function getJson(path) {
    return fetch(path, { credentials: 'same-origin', cache: 'no-store' }).then(function (r) {
      return r.json().catch(function () { return { error: 'HTTP ' + r.status }; }).then(function (body) {
        if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
        return body;
      });
    });
  }

  function selectedId() {
    var id = location.hash.slice(1);
    for (var i = 0; i < runs.length; i++) if (runs[i].id === id) return id;
    return runs.length > 0 ? runs[0].id : null;
  }

  function renderList(current) {
    var nav = document.getElementById('runs');
    var key = focusKey();
    nav.replaceChildren();
    if (runs.length < 2) return;
    nav.append(el('ul', {}, runs.map(function (r) {
      return el('li', {}, [el('a', { href: '#' + r.id, 'aria-current': r.id === current ? 'true' : 'false', 'data-run': r.id }, [
        el('strong', { text: r.name }), document.createTextNode(' '), el('span', { text: r.headline })
      ])]);
    })));
    refocus(key);
  }

  function num(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '–'; }
  function dur(ms) {
    if (typeof ms !== 'number') return '–';
    var s = Math.round(ms / 1000), h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
    return h > 0 ? h + 'h' + String(m).padStart(2, '0') + 'm' : m > 0 ? m + 'm' + String(s % 60).padStart(2, '0') + 's' : s + 's';
  }

  function countsTable(status) {
    var cols = [['kind', 'Kind'], ['source', 'Source'], ['total', 'Items'], ['done', 'Done'], ['inFlight', 'In flight'],
      ['waiting', 'Waiting'], ['retrying', 'Retrying'], ['quarantined', 'Quarantined'], ['staying', 'Staying']];
    var head = el('tr', {}, cols.map(function (c) { return el('th', { scope: 'col', text: c[1] }); }));
    var rows = (status.bySource || []).map(function (s) {
      return el('tr', { 'data-kind': s.kind, 'data-source': s.source }, cols.map(function (c) {
        return el('td', { 'data-count': c[0], text: c[0] === 'kind' || c[0] === 'source' ? s[c[0]] : num(s[c[0]]) });
      }));
    });
    return el('div', { class: 'scroll' }, [el('table', { id: 'counts' }, [el('thead', {}, [head]), el('tbody', {}, rows)])]);
  }

  function fact(dl, name, value, key) {
    dl.append(el('dt', { text: name }), el('dd', { 'data-fact': key, text: value }));
  }

  function send(id, body) {
    confirming = null;
    return fetch('/api/runs/' + id + '/control', {
      method: 'POST', credentials: 'same-origin',
      headers: { 'Content-Type': 'application/json', 'X-Shardmove-Page': PAGE },
      body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return { error: 'HTTP ' + r.status }; }).then(function (b) {
        message = r.ok ? { text: b.says, error: false } : { text: b.error || 'HTTP ' + r.status, error: true };
      });
    }).catch(function (e) { message = { text: String(e.message || e), error: true }; }).then(refresh);
  }

  function controls(id, status) {
    if (READ_ONLY) return null;
    var box = el('div', { class: 'controls', role: 'group', 'aria-label': 'Control' });
    if (confirming) {
      var c = confirming;
      box.append(el('div', { class: 'confirm', role: 'alertdialog', 'aria-label': 'Confirm' }, [
        el('p', { text: c.question }),
        el('button', { type: 'button', 'data-confirm': c.body.action, onclick: function () { send(id, c.body); } , text: c.yes }),
        document.createTextNode(' '),
        el('button', { type: 'button', 'data-cancel': '', onclick: function () { confirming = null; message = null; refresh(); }, text: 'Cancel' })
      ]));
      return box;
    }
    var ask = function (body, question, yes) { return function () { confirming = { body: body, question: question, yes: yes }; render(); }; };
    // A finished run has nothing to steer.
    if (status.state === 'done' || status.state === 'doneWithQuarantine') return null;
    var paused = status.control && status.control.paused;
    if (paused) box.append(el('button', { type: 'button', 'data-action': 'unpause', onclick: ask({ action: 'unpause' }, 'Schedule moves again?', 'Yes, unpause'), text: 'Unpause' }));
    else box.append(el('button', { type: 'button', 'data-action': 'pause', onclick: ask({ action: 'pause' }, 'Pause this run? Moves in flight are followed to their end; nothing new starts.', 'Yes, pause'), text: 'Pause' }));
    box.append(el('button', { type: 'button', 'data-action': 'stop', onclick: ask({ action: 'stop' }, 'Stop this run? Nothing new starts, the moves in flight are followed, then it exits; run again continues it.', 'Yes, stop'), text: 'Stop' }));
    // Under move.concurrency: auto, an empty box (or "Auto") hands a pinned cap back to the limiter.
    var auto = status.planAuto === true;
    var pinned = status.control && status.control.concurrency !== null;
    var input = el('input', { type: 'number', min: 1, max: 1000, step: 1, 'aria-label': 'Moves at once', id: 'cap-input', placeholder: auto ? 'auto' : '', value: pinned ? status.control.concurrency : '' });
    var back = auto ? 'auto' : 'plan';
    var backQuestion = auto ? "Hand the cap back to move.concurrency: auto's limiter?" : "Go back to the plan's move.concurrency?";
    box.append(el('label', { for: 'cap-input', text: 'Moves at once' }), input,
      el('button', { type: 'button', 'data-action': 'concurrency', onclick: function () {
        var v = input.value.trim() === '' ? back : Number(input.value);
        ask({ action: 'concurrency', value: v }, v === back ? backQuestion : 'Allow ' + v + ' moves at once from now on?', 'Yes, set it')();
      }, text: 'Set' }));
    if (auto && pinned)
      box.append(el('button', { type: 'button', 'data-action': 'auto', onclick: ask({ action: 'concurrency', value: 'auto' }, backQuestion, 'Yes, auto'), text: 'Auto' }));
    return box;
  }

  // Redrawn every refresh: the element with the keyboard focus, and a number being typed, are kept.
  var KEYS = ['id', 'data-run', 'data-action', 'data-confirm', 'data-cancel'];
  function focusKey() {
    var a = document.activeElement;
    if (!a || a === document.body) return null;
    for (var i = 0; i < KEYS.length; i++) if (a.hasAttribute(KEYS[i])) return [KEYS[i], a.getAttribute(KEYS[i])];
    return null;
  }
  function refocus(key) {
    if (!key) return;
    var all = document.querySelectorAll('[' + key[0] + ']');
    for (var i = 0; i < all.length; i++) if (all[i].getAttribute(key[0]) === key[1]) { all[i].focus(); return; }
  }

  var last = null;
  var typed = null;
  function render() {
    var main = document.getElementById('run');
    if (!last) return;
    var id = last.id, status = last.status;
    var key = focusKey();
    var capInput = document.getElementById('cap-input');
    if (capInput && key && key[1] === 'cap-input') typed = capInput.value;
    main.replaceChildren();
    var tone = status.now ? 'tone-' + status.now.tone : status.state === 'failed' ? 'tone-alarm' : status.state === 'done' ? 'tone-ok' : '';
    main.append(el('h2', { text: last.name }));
    main.append(el('p', { class: 'headline ' + tone, id: 'headline', text: last.headline }));
    var dl = el('dl', { class: 'facts' });
    var sum = function (key) { return (status.kinds || []).reduce(function (n, k) { return n + (k[key] || 0); }, 0); };
    fact(dl, 'Done', num(sum('done')) + ' of ' + num(status.total - (status.staying || 0)), 'done');
    fact(dl, 'In flight', num(sum('inFlight')), 'inFlight');
    fact(dl, 'Quarantined', num(sum('quarantined')), 'quarantined');
    fact(dl, 'Rate', status.state === 'running' ? num(Math.round(status.movesPerMinute || 0)) + ' moves/min' : '–', 'rate');
    fact(dl, 'ETA', dur(status.etaMs), 'eta');
    var cap = status.cap;
    // Under move.concurrency: auto the limiter's cap is said as its own, with its last reason.
    fact(dl, 'Cap', status.auto ? status.auto.cap + ', chosen by auto (' + status.auto.reason + ')' : cap ? cap.cap + ' (' + cap.reason + ')' : '–', 'cap');
    fact(dl, 'Checkpoint', status.checkpoint, 'checkpoint');
    main.append(dl);
    var box = controls(id, status);
    if (box) main.append(box);
    if (message) main.append(el('p', { id: 'message', class: message.error ? 'error' : '', role: 'status', text: message.text }));
    main.append(el('h3', { text: 'Items per source' }), countsTable(status));
    if (last.caps.length > 0)
      main.append(el('h3', { text: 'Cap changes, newest first' }), el('ol', { id: 'caps' }, last.caps.map(function (c) {
        return el('li', { text: new Date(c.at).toISOString().slice(11, 19) + ' UTC  cap ' + c.cap + ' (' + c.limit + '): ' + c.reason });
      })));
    main.append(el('h3', { text: 'Status' }), el('pre', { id: 'status-text', text: last.text }));
    if (last.weights.length > 0)
      main.append(el('h3', { text: 'Geo and weights' }), el('pre', { id: 'weights', text: last.weights.join('\\n').replace(/^\\n+/, '') }));
    main.append(el('p', {}, [el('a', { href: '/api/runs/' + id + '/report.html', target: '_blank', rel: 'noopener', text: 'Full HTML report' }),
      document.createTextNode(' · '), el('a', { href: '/api/runs/' + id, text: 'status JSON' }),
      document.createTextNode(' · '), el('a', { href: '/api/runs/' + id + '/report', text: 'report JSON' })]));
    var again = document.getElementById('cap-input');
    if (again && typed !== null && key && key[1] === 'cap-input') again.value = typed;
    refocus(key);
  }

  function refresh() {
    return getJson('/api/runs').then(function (list) {
      runs = list.runs;
      var id = selectedId();
      renderList(id);
      if (!id) { document.getElementById('run').replaceChildren(el('p', { text: 'No run is served.' })); return; }
      var entry = runs.filter(function (r) { return r.id === id; })[0];
      return Promise.all([getJson('/api/runs/' + id), getJson('/api/runs/' + id + '/text'), getJson('/api/runs/' + id + '/caps'), getJson('/api/runs/' + id + '/weights')]).then(function (got) {
        last = { id: id, name: entry.name, headline: entry.headline, status: got[0], text: got[1].text, caps: got[2].caps, weights: got[3].lines };
        // A confirmation open on the page is not redrawn away under the operator's pointer.
        render();
      }, function (e) {
        last = null;
        document.getElementById('run').replaceChildren(el('h2', { text: entry.name }), el('p', { class: 'error', text: String(e.message || e) }));
      });
    }).then(function () {
      document.getElementById('updated').textContent = 'updated ' + new Date().toLocaleTimeString();
    }, function (e) {
      document.getElementById('updated').textContent = 'not updated: ' + String(e.message || e);
    });
  }

  function loop() { refresh().then(function () { setTimeout(loop, INTERVAL); }); }
  window.addEventListener('hashchange', function () { confirming = null; message = null; refresh(); });
  loop();
})();
`;
