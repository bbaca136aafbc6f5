// app.js: the owner page's only script (docs/ui.md). The server renders every
// page; this module keeps a view true without a reload: every 2 s it fetches
// the page again and swaps <main> when it changed (never on a confirmation or
// a result, whose <main> has data-live="0", and never while a form field in it
// has the focus), keeping an output box scrolled to its end when it was. It
// sends a link of the form /ui/#/approvals/<id> (the one sandbox_create's
// message names) to /ui/approvals#<id>. It says so when the session ended.
const INTERVAL_MS = 2000;

function route() {
  const m = /^#\/([a-z]+)\/([A-Za-z0-9_-]+)$/.exec(location.hash);
  if (location.pathname === '/ui/' && m) location.replace(`/ui/${m[1]}#${m[2]}`);
}

function note(text) {
  const n = document.getElementById('live-note');
  if (!n) return;
  n.textContent = text;
  n.hidden = !text;
}

function atEnd(el) {
  return el.scrollHeight - el.scrollTop - el.clientHeight < 8;
}

function swap(main, fresh) {
  const pinned = new Map();
  for (const pre of main.querySelectorAll('pre.output[data-key]')) pinned.set(pre.dataset.key, atEnd(pre));
  main.replaceChildren(...fresh.childNodes);
  for (const pre of main.querySelectorAll('pre.output[data-key]'))
    if (pinned.get(pre.dataset.key) !== false) pre.scrollTop = pre.scrollHeight;
}

async function refresh() {
  const main = document.getElementById('main');
  if (!main || main.dataset.live !== '1') return;
  if (main.contains(document.activeElement) && document.activeElement.form) return;
  let res;
  try {
    res = await fetch(location.pathname + location.search, { credentials: 'same-origin', cache: 'no-store' });
  } catch {
    note('chat2sbx serve does not answer; the page will update when it is back.');
    return;
  }
  if (res.status === 401) {
    note('Your session ended. Run chat2sbx ui in a terminal for a new login link.');
    return;
  }
  if (!res.ok) return;
  note('');
  const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
  const fresh = doc.getElementById('main');
  if (fresh && fresh.dataset.live === '1' && fresh.innerHTML !== main.innerHTML) swap(main, fresh);
}

function start() {
  route();
  for (const pre of document.querySelectorAll('pre.output')) pre.scrollTop = pre.scrollHeight;
  const target = location.hash && document.getElementById(location.hash.slice(1));
  if (target) target.focus?.();
  setInterval(refresh, INTERVAL_MS);
}

window.addEventListener('hashchange', route);
if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
