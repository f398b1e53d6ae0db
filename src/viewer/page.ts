/**
 * The viewer page served at `GET /_tap/`: one HTML document with its CSS and script inline (no build
 * step, nothing loaded from elsewhere). The script lists sessions (`api/sessions`), shows one
 * (`api/sessions/:id`, conversation HTML rendered and escaped by the server), searches
 * (`api/search?q=`), and listens to `api/events` for new records: a record that continues the shown
 * conversation is appended, anything else (a rewind, a retry) reloads the session. Every string the
 * script itself puts on the page goes through textContent.
 */
import { CONVERSATION_CSS } from "../recover/render-html.ts";

const PAGE_CSS = `
*{box-sizing:border-box}
html,body{margin:0;height:100%}
body{display:grid;grid-template-rows:auto 1fr;grid-template-columns:minmax(260px,340px) 1fr;grid-template-areas:"top top" "side main";background:#f8f9fb}
#top{grid-area:top;display:flex;align-items:center;gap:12px;padding:8px 14px;background:#1d2330;color:#fff;font:14px system-ui,sans-serif}
#top h1{font-size:15px;margin:0;font-weight:600}
#live{font-size:12px;color:#adb5bd}
#live.on{color:#8ce99a}
#side{grid-area:side;border-right:1px solid #d8dde6;overflow:auto;background:#fff;font:13px system-ui,sans-serif}
#search{width:calc(100% - 16px);margin:8px;padding:6px 8px;border:1px solid #ced4da;border-radius:6px;font:inherit}
#sessions,#results{list-style:none;margin:0;padding:0}
#sessions li,#results li{padding:8px 10px;border-bottom:1px solid #f1f3f5;cursor:pointer}
#sessions li:hover,#results li:hover{background:#f1f3f5}
#sessions li.active{background:#e7f0ff}
.sid{font:12px ui-monospace,monospace;color:#1d2330}
.prompt{margin:2px 0;color:#1d2330;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.meta{font-size:11px;color:#5b6475;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.badge{display:inline-block;font-size:11px;border-radius:4px;padding:0 5px;margin-left:6px}
.badge.intact{background:#d3f9d8;color:#2b8a3e}.badge.stub,.badge.missing{background:#ffe3e3;color:#c92a2a}
.snippet{font-size:12px;color:#343a40}
.guard{margin:4px 0;padding:4px 8px;border-radius:6px;background:#fff4e6;border:1px solid #ffa94d;color:#862e00;font:12px system-ui,sans-serif}
.guard code{background:#ffe8cc;padding:0 4px;border-radius:4px}
#main{grid-area:main;overflow:auto;padding:12px 20px 40px}
#facts{font:13px system-ui,sans-serif;color:#343a40;margin-bottom:10px}
#facts h2{font-size:16px;margin:0 0 6px;font-family:ui-monospace,monospace}
#facts .row{margin:2px 0}
#facts code{background:#f1f3f5;padding:1px 4px;border-radius:4px}
#facts a{margin-right:10px}
.empty{color:#868e96;font:14px system-ui,sans-serif;padding:20px}
`;

const PAGE_SCRIPT = `
"use strict";
const $ = (s) => document.querySelector(s);
const state = { sessions: [], current: null, dir: null, tail: null, loading: null };
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
async function getJson(url) {
  const r = await fetch(url, { headers: { accept: "application/json" } });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.error || ("HTTP " + r.status));
  return body;
}
function when(iso) { return iso ? iso.slice(0, 16).replace("T", " ") + " UTC" : "?"; }
function idOf(s) { return s.sessionId || s.dir; }
function badge(state) { return el("span", "badge " + state, state === "intact" ? "Claude: intact" : "Claude: " + state); }
const GUARD_WORDS = { missing: "is gone", stub: "is a stub", behind: "is behind the mirror" };
function guardBanner(alert) {
  const b = el("div", "guard");
  b.setAttribute("role", "alert");
  b.append(el("b", null, "Claude Code's transcript " + (GUARD_WORDS[alert.state] || alert.state) + " "), el("span", null, "(since " + when(alert.since) + "). Quit Claude Code, then run "), el("code", null, alert.command));
  return b;
}

async function loadSessions() {
  state.sessions = await getJson("api/sessions");
  renderSessions();
  // The guard can raise or clear an alert between records: keep the open session's banner in step.
  const open = state.sessions.find((s) => idOf(s) === state.current);
  const facts = $("#facts");
  if (open && facts.querySelector("h2")) {
    const shown = facts.querySelector(".guard");
    if (shown) shown.remove();
    if (open.guard) facts.querySelector("h2").after(guardBanner(open.guard));
  }
}
function renderSessions() {
  const list = $("#sessions");
  if (state.sessions.length === 0) { list.replaceChildren(el("li", "empty", "No mirrored sessions yet.")); return; }
  list.replaceChildren(...state.sessions.map((s) => {
    const li = el("li", "session" + (idOf(s) === state.current ? " active" : ""));
    li.dataset.session = idOf(s);
    const head = el("div", "sid", idOf(s).slice(0, 13));
    head.append(badge(s.claudeTranscript));
    li.append(head, el("div", "prompt", s.firstPrompt || "(no prompt)"), el("div", "meta", when(s.lastTimestamp) + " · " + s.records + " records · " + (s.cwd || "cwd unknown")));
    if (s.guard) li.append(guardBanner(s.guard));
    li.addEventListener("click", () => go(idOf(s)));
    return li;
  }));
}
function go(id, uuid) {
  const hash = "#/s/" + encodeURIComponent(id) + (uuid ? "/" + encodeURIComponent(uuid) : "");
  if (location.hash === hash) route(); else location.hash = hash;
}

async function showSession(id, uuid) {
  const data = await getJson("api/sessions/" + encodeURIComponent(id));
  const s = data.session;
  state.current = idOf(s); state.dir = s.dir; state.tail = data.tail;
  const facts = $("#facts");
  facts.replaceChildren();
  facts.append(el("h2", null, idOf(s)));
  if (s.guard) facts.append(guardBanner(s.guard));
  const row = (label, value) => { const d = el("div", "row"); d.append(el("b", null, label + " "), value); facts.append(d); };
  row("Working directory", el("code", null, s.cwd || "unknown"));
  row("Time", document.createTextNode(when(s.firstTimestamp) + " – " + when(s.lastTimestamp)));
  row("Records", document.createTextNode(s.records + " (" + s.userRecords + " user, " + s.assistantRecords + " assistant); " + s.leaves + (s.leaves === 1 ? " leaf; " : " leaves; ") + s.compactions + " compaction(s)"));
  const claude = el("span"); claude.append(badge(s.claudeTranscript)); row("Claude Code transcript", claude);
  if (s.claudeTranscript !== "intact" && s.sessionId) row("Restore", el("code", null, "sessiontap restore " + s.sessionId));
  const links = el("div", "row");
  for (const f of ["md", "html", "jsonl"]) { const a = el("a", null, "export ." + f); a.href = "api/sessions/" + encodeURIComponent(idOf(s)) + "/export?format=" + f; links.append(a); }
  facts.append(links);
  $("#conversation").innerHTML = data.html; // rendered and escaped by the tap
  renderSessions();
  if (uuid) reveal(uuid); else $("#main").scrollTop = $("#main").scrollHeight;
}
function reveal(uuid) {
  const target = document.getElementById("r-" + uuid);
  if (!target) return;
  for (let p = target.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
  target.scrollIntoView({ block: "center" });
  flash(target);
}
function flash(node) { node.classList.add("fresh"); setTimeout(() => node.classList.remove("fresh"), 4000); }

let searchTimer = null;
function onSearch() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(async () => {
    const q = $("#search").value.trim();
    const results = $("#results");
    if (q === "") { results.replaceChildren(); results.hidden = true; $("#sessions").hidden = false; return; }
    const hits = await getJson("api/search?q=" + encodeURIComponent(q));
    $("#sessions").hidden = true; results.hidden = false;
    if (hits.length === 0) { results.replaceChildren(el("li", "empty", "Nothing matches.")); return; }
    results.replaceChildren(...hits.map((h) => {
      const li = el("li", "hit");
      li.append(el("div", "sid", (h.sessionId || h.dir).slice(0, 13) + " · " + h.type + " · " + when(h.timestamp)), el("div", "snippet", h.snippet));
      li.addEventListener("click", () => go(h.sessionId || h.dir, h.uuid));
      return li;
    }));
  }, 200);
}

let listTimer = null;
function refreshListSoon() { clearTimeout(listTimer); listTimer = setTimeout(() => loadSessions().catch(() => {}), 300); }
function onRecords(batch) {
  refreshListSoon();
  if (batch.scope !== "main" || batch.dir !== state.dir) return;
  const conv = $("#conversation");
  const nearBottom = $("#main").scrollHeight - $("#main").scrollTop - $("#main").clientHeight < 80;
  let reload = false;
  for (const r of batch.records) {
    if (!r.uuid || document.getElementById("r-" + r.uuid)) continue;
    if (state.tail === null || r.parentUuid === state.tail) {
      const t = document.createElement("template");
      t.innerHTML = r.html; // rendered and escaped by the tap
      const node = t.content.firstElementChild;
      conv.append(node);
      flash(node);
      state.tail = r.uuid;
    } else reload = true; // a rewind or a retry: the tree changed shape
  }
  if (reload) showSession(state.current).catch(() => {});
  else if (nearBottom) $("#main").scrollTop = $("#main").scrollHeight;
}
function listen() {
  const live = $("#live");
  const source = new EventSource("api/events");
  source.addEventListener("ready", () => { live.textContent = "● live"; live.className = "on"; });
  source.addEventListener("records", (e) => onRecords(JSON.parse(e.data)));
  source.addEventListener("error", () => { live.textContent = "○ reconnecting"; live.className = ""; });
}
function route() {
  const m = /^#\\/s\\/([^/]+)(?:\\/(.+))?$/.exec(location.hash);
  if (m) showSession(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : null).catch((e) => { $("#conversation").replaceChildren(el("div", "empty", String(e.message || e))); });
}
$("#search").addEventListener("input", onSearch);
window.addEventListener("hashchange", route);
loadSessions().then(route).catch((e) => $("#sessions").replaceChildren(el("li", "empty", String(e.message || e))));
listen();
setInterval(() => { if (!document.hidden) loadSessions().catch(() => {}); }, 10000);
`;

/** The page, with `nonce` on its script (the Content-Security-Policy allows only that script). */
export function viewerPage(nonce: string, version: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>sessiontap</title><link rel="icon" href="data:,">
<style>${PAGE_CSS}${CONVERSATION_CSS}</style>
</head><body>
<header id="top"><h1>sessiontap</h1><span>${version.replace(/[^0-9A-Za-z.+-]/g, "")}</span><span id="live">○ connecting</span></header>
<nav id="side"><input id="search" type="search" placeholder="Search all sessions" autocomplete="off" aria-label="Search all sessions">
<ul id="sessions"></ul><ul id="results" hidden></ul></nav>
<main id="main" class="conv"><div id="facts"><div class="empty">Pick a session on the left.</div></div><div id="conversation"></div></main>
<script nonce="${nonce.replace(/[^A-Za-z0-9+/=-]/g, "")}">${PAGE_SCRIPT}</script>
</body></html>
`;
}

/** The Content-Security-Policy of the viewer's responses: nothing from elsewhere, only the nonced script. */
export function viewerCsp(nonce: string): string {
  return `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`;
}
