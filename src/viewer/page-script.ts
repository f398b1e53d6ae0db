/**
 * The viewer page's browser script: lists sessions (`api/sessions`) with their titles, projects, tokens and
 * costs, filtered by project and date; shows one (`api/sessions/:id`, conversation HTML rendered and
 * escaped by the server) with times in the reader's zone (UTC on hover) and each tool result inside its
 * call's pair; searches (`api/search?q=`) with titles and the matches marked; restores a session into
 * Claude Code (`POST api/sessions/:id/restore`, a dry run first); moves between sessions from the
 * keyboard (j/k or the arrows, / to search, Escape back); and listens to `api/events` for new records: a
 * record that continues the shown conversation is appended, anything else (a rewind, a retry) reloads the
 * session. Every string the script itself puts on the page goes through textContent.
 */
export const PAGE_SCRIPT = String.raw`
"use strict";
const $ = (s) => document.querySelector(s);
const state = { sessions: [], shown: [], current: null, dir: null, tail: null, query: "", session: null };
function el(tag, cls, text) { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined && text !== null) e.textContent = text; return e; }
async function getJson(url, init) {
  const r = await fetch(url, Object.assign({ headers: { accept: "application/json" } }, init || {}));
  const body = await r.json().catch(() => ({}));
  if (!r.ok && !(body && body.outcome)) throw new Error(body.error || ("HTTP " + r.status));
  return { status: r.status, body: body };
}
const two = (n) => String(n).padStart(2, "0");
/** A time in the reader's zone: YYYY-MM-DD HH:MM (with seconds when asked). */
function local(iso, seconds) {
  const d = new Date(iso);
  if (isNaN(d.getTime())) return "?";
  return d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " + two(d.getHours()) + ":" + two(d.getMinutes()) + (seconds ? ":" + two(d.getSeconds()) : "");
}
function utc(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC") : ""; }
/** A <time> showing local time, UTC on hover. */
function timeEl(iso, seconds) { const t = el("time", null, iso ? local(iso, seconds) : "?"); if (iso) { t.dateTime = iso; t.title = utc(iso); } return t; }
/** Rewrites the server's UTC <time> elements under "root" to the reader's zone, keeping UTC in the tooltip. */
function localize(root) {
  for (const t of root.querySelectorAll("time[datetime]")) {
    if (t.dataset.local) continue;
    t.dataset.local = "1";
    const iso = t.getAttribute("datetime");
    if (!iso) continue;
    t.textContent = local(iso, true);
    t.title = utc(iso);
  }
}
function idOf(s) { return s.sessionId || s.dir; }
function badge(st) { return el("span", "badge " + st, st === "intact" ? "Claude: intact" : "Claude: " + st); }
const GUARD_WORDS = { missing: "is gone", stub: "is a stub", behind: "is behind the mirror" };
/** The guard's alert on a session: Claude Code lost its transcript, and the command that brings it back. */
function guardBanner(alert) {
  const b = el("div", "guard");
  b.setAttribute("role", "alert");
  b.append(el("b", null, "Claude Code's transcript " + (GUARD_WORDS[alert.state] || alert.state) + " "), el("span", null, "(since "), timeEl(alert.since), el("span", null, "). Quit Claude Code, then run "), el("code", null, alert.command));
  return b;
}
function tokens(n) { return n < 1000 ? String(n) : n < 1e6 ? (n / 1000).toFixed(n < 1e4 ? 2 : n < 1e5 ? 1 : 0) + "k" : (n / 1e6).toFixed(n < 1e7 ? 2 : 1) + "M"; }
function total(u) { return u ? u.inputTokens + u.outputTokens + u.cacheCreationTokens + u.cacheReadTokens : 0; }
function usd(n) { return n === null || n === undefined ? "?" : n === 0 ? "$0.00" : n >= 0.01 ? "$" + n.toFixed(2) : "$" + n.toPrecision(2); }
function base(path) { if (!path) return "cwd unknown"; const p = path.replace(/\/+$/, "").split("/"); return p[p.length - 1] || path; }

// ---- filters: project and date, applied to the list and to search hits ----
function dayStart(d) { return new Date(d.getFullYear(), d.getMonth(), d.getDate()).getTime(); }
/** The [from, to) range the date filter allows, or null for any time. */
function range() {
  const day = $("#day").value;
  if (day) { const [y, m, d] = day.split("-").map(Number); const from = new Date(y, m - 1, d).getTime(); return [from, new Date(y, m - 1, d + 1).getTime()]; }
  const when = $("#when").value;
  if (!when) return null;
  const today = dayStart(new Date());
  const tomorrow = dayStart(new Date(today + 36 * 3600e3));
  if (when === "today") return [today, tomorrow];
  if (when === "yesterday") return [dayStart(new Date(today - 12 * 3600e3)), today];
  const n = Number(when);
  const from = new Date(today); from.setDate(from.getDate() - (n - 1));
  return [from.getTime(), tomorrow];
}
function passes(s) {
  const project = $("#project").value;
  if (project && s.cwd !== project) return false;
  const r = range();
  if (!r) return true;
  const first = Date.parse(s.firstTimestamp || s.lastTimestamp || "");
  const last = Date.parse(s.lastTimestamp || s.firstTimestamp || "");
  return !isNaN(first) && first < r[1] && last >= r[0];
}
function renderProjects() {
  const select = $("#project");
  const chosen = select.value;
  const counts = new Map();
  for (const s of state.sessions) if (s.cwd) counts.set(s.cwd, (counts.get(s.cwd) || 0) + 1);
  const options = [el("option", null, "All projects")];
  options[0].value = "";
  for (const [cwd, n] of [...counts.entries()].sort((a, b) => a[0].localeCompare(b[0]))) { const o = el("option", null, base(cwd) + " (" + n + ")"); o.value = cwd; o.title = cwd; options.push(o); }
  select.replaceChildren(...options);
  select.value = counts.has(chosen) ? chosen : "";
}

// ---- the session list ----
async function loadSessions() {
  state.sessions = (await getJson("api/sessions")).body;
  renderProjects();
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
  const hadFocus = list.contains(document.activeElement);
  state.shown = state.sessions.filter(passes);
  let sum = 0, unknown = false, toks = 0;
  for (const s of state.shown) { toks += total(s.usage); if (s.costUSD === null || s.costUSD === undefined) { if (total(s.usage) > 0) unknown = true; } else sum += s.costUSD; }
  $("#totals").textContent = state.shown.length + " session" + (state.shown.length === 1 ? "" : "s") + " · " + tokens(toks) + " tokens · " + (unknown ? (sum > 0 ? usd(sum) + " + ?" : "cost unknown") : "≈ " + usd(sum));
  if (state.shown.length === 0) { list.replaceChildren(el("li", "empty", state.sessions.length === 0 ? "No mirrored sessions yet." : "No session matches the filters.")); return; }
  list.replaceChildren(...state.shown.map((s) => {
    const li = el("li", "session" + (idOf(s) === state.current ? " active" : ""));
    li.dataset.session = idOf(s);
    const a = el("a");
    a.href = "#/s/" + encodeURIComponent(idOf(s));
    const title = el("div", "title", s.title || "(no prompt)");
    title.title = s.title || "";
    const meta = el("div", "meta");
    meta.append(timeEl(s.lastTimestamp), document.createTextNode(" · " + usd(s.costUSD) + " · " + tokens(total(s.usage)) + " tokens · " + base(s.cwd)));
    meta.title = s.cwd || "";
    const sid = el("div", "sid", idOf(s).slice(0, 13));
    sid.append(badge(s.claudeTranscript));
    a.append(title, meta, sid);
    li.append(a);
    if (s.guard) li.append(guardBanner(s.guard));
    return li;
  }));
  // Re-rendering replaces the links: keep the keyboard where it was.
  const active = list.querySelector("li.active a");
  if (hadFocus && active) active.focus({ preventScroll: true });
}
function go(id, uuid) {
  const hash = "#/s/" + encodeURIComponent(id) + (uuid ? "/" + encodeURIComponent(uuid) : "");
  if (location.hash === hash) route(); else location.hash = hash;
}

// ---- one session ----
async function showSession(id, uuid) {
  const data = (await getJson("api/sessions/" + encodeURIComponent(id))).body;
  const s = data.session;
  state.current = idOf(s); state.dir = s.dir; state.tail = data.tail; state.session = s;
  document.body.classList.add("viewing");
  const facts = $("#facts");
  facts.replaceChildren();
  facts.append(el("h2", null, s.title || idOf(s)));
  if (s.guard) facts.append(guardBanner(s.guard));
  const row = (label, ...value) => { const d = el("div", "row"); d.append(el("b", null, label + " "), ...value); facts.append(d); };
  row("Session", el("code", null, idOf(s)));
  row("Project", el("code", null, s.cwd || "unknown"), document.createTextNode(s.gitBranch ? " (branch " + s.gitBranch + ")" : ""));
  row("Time", timeEl(s.firstTimestamp), document.createTextNode(" – "), timeEl(s.lastTimestamp));
  const u = s.usage;
  row("Usage", document.createTextNode(tokens(u.inputTokens) + " in · " + tokens(u.outputTokens) + " out · " + tokens(u.cacheCreationTokens) + " cache write · " + tokens(u.cacheReadTokens) + " cache read · " + (s.costUSD === null ? "cost unknown (" + (s.models.join(", ") || "no model") + " not all in the price table)" : "≈ " + usd(s.costUSD))));
  row("Records", document.createTextNode(s.records + " (" + s.userRecords + " user, " + s.assistantRecords + " assistant); " + s.leaves + (s.leaves === 1 ? " leaf; " : " leaves; ") + s.compactions + " compaction(s)"));
  const claude = el("span"); claude.append(badge(s.claudeTranscript)); row("Claude Code transcript", claude);
  facts.append(restorePanel(s));
  const links = el("div", "row links");
  for (const f of ["md", "html", "jsonl"]) { const a = el("a", null, "export ." + f); a.href = "api/sessions/" + encodeURIComponent(idOf(s)) + "/export?format=" + f; links.append(a); }
  facts.append(links);
  const conv = $("#conversation");
  conv.innerHTML = data.html; // rendered and escaped by the tap
  settle(conv);
  renderSessions();
  const active = document.querySelector("#sessions li.active a");
  if (active && document.activeElement !== $("#search")) active.scrollIntoView({ block: "nearest" });
  if (uuid) reveal(uuid); else $("#main").scrollTop = $("#main").scrollHeight;
}
/** After server HTML arrives: local times, and each tool result moved into its call's pair. */
function settle(root) { localize(root); pairResults(root); }
function pairResults(root) {
  for (const result of root.querySelectorAll(".rec .tool-result[data-tool-use-id]")) {
    if (result.closest(".tool-use")) continue;
    const id = result.dataset.toolUseId;
    const pair = [...document.querySelectorAll("details.tool-use")].find((d) => d.dataset.toolUseId === id);
    if (!pair) continue;
    const article = result.closest(".rec");
    const label = result.querySelector(".tool-label");
    if (label) label.remove();
    pair.querySelector(".tool-out").append(result);
    const lines = (pair.querySelector(".tool-input").textContent + "\n" + result.textContent).split("\n").length;
    const error = result.classList.contains("error");
    pair.querySelector(".tool-state").textContent = error ? "error" : (result.textContent.replace(/\n+$/, "").split("\n").length + " lines");
    if (error) pair.classList.add("error");
    if (lines > 8) pair.open = false;
    if (article && !article.querySelector(".text,.tool-result,.tool-use,details,.attachment")) { article.hidden = true; article.classList.add("paired"); }
  }
}
function reveal(uuid) {
  let target = document.getElementById("r-" + uuid);
  if (!target) return;
  target.classList.add("fresh");
  if (target.hidden) {
    // A record shown inside a tool call's pair: open that pair instead.
    const ids = (target.dataset.toolResults || "").split(" ").filter(Boolean);
    const pair = [...document.querySelectorAll("details.tool-use")].find((d) => ids.includes(d.dataset.toolUseId));
    if (pair) { pair.open = true; target = pair; }
  }
  for (let p = target.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
  if (state.query) highlight(target, state.query);
  target.scrollIntoView({ block: "center" });
  flash(target);
}
function flash(node) { node.classList.add("fresh"); setTimeout(() => node.classList.remove("fresh"), 4000); }

// ---- restore into Claude Code (the same code as "sessiontap restore"; a dry run first) ----
function restorePanel(s) {
  const box = el("div"); box.id = "restore";
  const out = el("div");
  const start = el("button", null, "Restore into Claude Code…");
  start.id = "restore-plan";
  start.title = "Writes this session where claude --resume finds it; shows what it would do first";
  start.addEventListener("click", () => plan(s, false, out));
  box.append(s.claudeTranscript === "intact" ? el("span", null, "Claude Code's own transcript is intact. ") : el("span", null, "Claude Code's transcript is " + s.claudeTranscript + ". "), start, out);
  return box;
}
async function restore(s, options) {
  return (await getJson("api/sessions/" + encodeURIComponent(idOf(s)) + "/restore", { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(options) })).body;
}
async function plan(s, force, out) {
  out.replaceChildren(el("div", null, "Checking…"));
  let answer;
  try { answer = await restore(s, { dryRun: true, force: force }); } catch (e) { out.replaceChildren(el("div", "error", String(e.message || e))); return; }
  if (!answer.ok) {
    out.replaceChildren(el("div", "error", answer.error || "refused"));
    if (answer.outcome && answer.outcome.action === "refuse" && !force) {
      const again = el("button", null, "Replace it anyway (a backup is kept)…");
      again.id = "restore-force";
      again.addEventListener("click", () => plan(s, true, out));
      out.append(again);
    }
    return;
  }
  const go = el("button", "go", answer.outcome.action === "create" ? "Restore" : "Back up and replace");
  go.id = "restore-go";
  const cancel = el("button", null, "Cancel");
  cancel.addEventListener("click", () => out.replaceChildren());
  go.addEventListener("click", async () => {
    go.disabled = true;
    let done;
    try { done = await restore(s, { dryRun: false, force: force }); } catch (e) { out.replaceChildren(el("div", "error", String(e.message || e))); return; }
    if (!done.ok) { out.replaceChildren(el("div", "error", done.error || "refused")); return; }
    const result = el("pre", "done", done.lines.join("\n"));
    result.id = "restore-done";
    out.replaceChildren(result);
    loadSessions().catch(() => {});
  });
  const planText = el("pre", "plan", answer.lines.join("\n"));
  planText.id = "restore-dry";
  out.replaceChildren(planText, go, cancel);
}

// ---- search ----
function termsOf(q) { const out = []; for (const m of q.matchAll(/"([^"]+)"|(\S+)/g)) out.push(m[1] || m[2]); return out.filter(Boolean); }
function escapeRe(t) { return t.replace(/[.*+?^$(){}|[\]\\/]/g, "\\$&"); }
/** Wraps each match of the query's terms in the text under "root" in <mark>. */
function highlight(root, q) {
  const terms = termsOf(q);
  if (terms.length === 0) return;
  const re = new RegExp(terms.map(escapeRe).join("|"), "giu");
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const nodes = [];
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (!n.parentElement.closest("mark")) nodes.push(n);
  for (const node of nodes) {
    const text = node.nodeValue;
    re.lastIndex = 0;
    if (!re.test(text)) continue;
    re.lastIndex = 0;
    const frag = document.createDocumentFragment();
    let at = 0;
    for (const m of text.matchAll(re)) {
      if (m[0] === "") continue;
      frag.append(text.slice(at, m.index), el("mark", null, m[0]));
      at = m.index + m[0].length;
    }
    frag.append(text.slice(at));
    node.replaceWith(frag);
  }
}
/** A snippet with its marks as <mark> elements (text nodes only). */
function snippetEl(hit) {
  const d = el("div", "snippet");
  let at = 0;
  for (const [a, b] of hit.marks || []) { d.append(hit.snippet.slice(at, a), el("mark", null, hit.snippet.slice(a, b))); at = b; }
  d.append(hit.snippet.slice(at));
  return d;
}
let searchTimer = null;
function onSearch() {
  clearTimeout(searchTimer);
  searchTimer = setTimeout(runSearch, 200);
}
async function runSearch() {
  const q = $("#search").value.trim();
  state.query = q;
  const results = $("#results");
  if (q === "") { results.replaceChildren(); results.hidden = true; $("#sessions").hidden = false; return; }
  const all = (await getJson("api/search?q=" + encodeURIComponent(q))).body;
  if ($("#search").value.trim() !== q) return; // a newer query is on its way
  const bySession = new Map(state.sessions.map((s) => [s.dir, s]));
  const hits = all.filter((h) => { const s = bySession.get(h.dir); return !s || passes(s); });
  $("#sessions").hidden = true; results.hidden = false;
  if (hits.length === 0) { results.replaceChildren(el("li", "empty", all.length === 0 ? "Nothing matches." : "Nothing matches within the filters.")); return; }
  results.replaceChildren(...hits.map((h) => {
    const li = el("li", "hit");
    const a = el("a");
    a.href = "#/s/" + encodeURIComponent(h.sessionId || h.dir) + "/" + encodeURIComponent(h.uuid);
    const meta = el("div", "meta");
    meta.append(document.createTextNode(h.role + " · "), timeEl(h.timestamp), document.createTextNode(" · " + (h.sessionId || h.dir).slice(0, 13)));
    a.append(el("div", "title", h.title || "(untitled)"), meta, snippetEl(h));
    li.append(a);
    return li;
  }));
}

// ---- live records ----
let listTimer = null;
function refreshListSoon() { clearTimeout(listTimer); listTimer = setTimeout(() => loadSessions().catch(() => {}), 300); }
function onRecords(batch) {
  refreshListSoon();
  if (batch.scope !== "main" || batch.dir !== state.dir) return;
  const conv = $("#conversation");
  const main = $("#main");
  const nearBottom = main.scrollHeight - main.scrollTop - main.clientHeight < 80;
  let reload = false;
  for (const r of batch.records) {
    if (!r.uuid || document.getElementById("r-" + r.uuid)) continue;
    if (state.tail === null || r.parentUuid === state.tail) {
      const t = document.createElement("template");
      t.innerHTML = r.html; // rendered and escaped by the tap
      const node = t.content.firstElementChild;
      conv.append(node);
      settle(node);
      if (!node.hidden) flash(node);
      state.tail = r.uuid;
    } else reload = true; // a rewind or a retry: the tree changed shape
  }
  if (reload) showSession(state.current).catch(() => {});
  else if (nearBottom) main.scrollTop = main.scrollHeight;
}
function listen() {
  const live = $("#live");
  const source = new EventSource("api/events");
  source.addEventListener("ready", () => { live.textContent = "● live"; live.className = "on"; });
  source.addEventListener("records", (e) => onRecords(JSON.parse(e.data)));
  source.addEventListener("error", () => { live.textContent = "○ reconnecting"; live.className = ""; });
}

// ---- navigation: the hash, the back button, the keyboard ----
function route() {
  const m = /^#\/s\/([^/]+)(?:\/(.+))?$/.exec(location.hash);
  if (m) showSession(decodeURIComponent(m[1]), m[2] ? decodeURIComponent(m[2]) : null).catch((e) => { $("#conversation").replaceChildren(el("div", "empty", String(e.message || e))); });
  else { document.body.classList.remove("viewing"); state.current = null; renderSessions(); }
}
function backToList() { if (location.hash) history.pushState(null, "", location.pathname + location.search); route(); const a = document.querySelector("#sessions li.active a, #sessions a"); if (a) a.focus(); }
/** Opens the session "step" places from the current one in the list as filtered (j/k, arrows). */
function step(n) {
  if (state.shown.length === 0) return;
  const m = /^#\/s\/([^/]+)/.exec(location.hash);
  const current = m ? decodeURIComponent(m[1]) : state.current;
  const at = state.shown.findIndex((s) => idOf(s) === current || s.dir === current || (current && idOf(s).startsWith(current)));
  const next = at < 0 ? (n > 0 ? 0 : state.shown.length - 1) : Math.min(state.shown.length - 1, Math.max(0, at + n));
  const id = idOf(state.shown[next]);
  go(id);
  const a = document.querySelector('#sessions li[data-session="' + CSS.escape(id) + '"] a');
  if (a) a.focus({ preventScroll: false });
}
document.addEventListener("keydown", (e) => {
  const typing = e.target instanceof HTMLElement && e.target.matches("input,select,textarea");
  if (e.key === "Escape") {
    if (e.target === $("#search") && $("#search").value) { $("#search").value = ""; runSearch(); return; }
    if (document.body.classList.contains("viewing")) { e.preventDefault(); backToList(); }
    return;
  }
  if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
  if (e.key === "j" || e.key === "ArrowDown") { e.preventDefault(); step(1); }
  else if (e.key === "k" || e.key === "ArrowUp") { e.preventDefault(); step(-1); }
  else if (e.key === "/") { e.preventDefault(); $("#search").focus(); }
});
$("#back").addEventListener("click", backToList);
$("#search").addEventListener("input", onSearch);
for (const id of ["#project", "#when", "#day"]) $(id).addEventListener("change", () => { if (id === "#when") $("#day").value = ""; renderSessions(); if (state.query) runSearch(); });
window.addEventListener("hashchange", route);
loadSessions().then(route).catch((e) => $("#sessions").replaceChildren(el("li", "empty", String(e.message || e))));
listen();
// The guard's alerts change without new records: refresh the list now and then.
setInterval(() => { if (!document.hidden) loadSessions().catch(() => {}); }, 10000);
`;
