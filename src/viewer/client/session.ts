// One session in the main column: its facts, its restore, its conversation, live: docs/DESIGN.md "The viewer".
import type { ListEntry, LiveEvent, RestoreReply, SessionView } from "../api.ts";
import { countsText } from "../../transcript/summary.ts";
import { TRANSCRIPT_IS } from "../../transcript/transcript-state.ts";
import { usageLine } from "../../usage/tokens.ts";
import { plural } from "../../utils/describe-error.ts";
import { badge, el, failed, getJson, guardBanner, idOf, liveSays, localize, message, state, timeEl, ui } from "./basics.ts";
import { highlight, loadSessions, renderSessions } from "./list.ts";

/** Counts navigations: an answer that arrives after a newer navigation began is not shown. */
let shown = 0;

export async function showSession(id: string, uuid?: string | null): Promise<void> {
  const ticket = ++shown;
  const data = await getJson<SessionView>("api/sessions/" + encodeURIComponent(id));
  if (ticket !== shown) return;
  const s = data.session;
  Object.assign(state, { current: idOf(s), dir: s.dir, tail: data.tail, bytes: s.bytes });
  // Below 800 px the home and the list scroll the page itself: a conversation starts with the page at its top.
  if (!document.body.classList.contains("viewing")) scrollTo(0, 0);
  document.body.classList.add("viewing");
  facts(s);
  ui.conversation.innerHTML = data.html; // rendered and escaped by the tap
  settle(ui.conversation);
  renderSessions();
  const active = ui.sessions.querySelector("li.active a");
  if (active && document.activeElement !== ui.search) active.scrollIntoView({ block: "nearest" });
  if (uuid) reveal(uuid);
  else ui.main.scrollTop = 0;
  follow(s.dir);
}

const reload = () => state.current !== null && showSession(state.current).catch(failed("reloading the session"));

function facts(s: SessionView["session"]): void {
  const rows: [string, ...(Node | string)[]][] = [
    ["Session", el("code", null, idOf(s))],
    ["Project", el("code", null, s.cwd || "unknown"), s.gitBranch ? " (branch " + s.gitBranch + ")" : ""],
    ["Time", timeEl(s.firstTimestamp), " – ", timeEl(s.lastTimestamp)],
    ["Usage", usageLine(s.usage, s.costUSD)],
    ["Conversation", `${countsText(s.counts)}; ${plural(s.leaves, "leaf", "leaves")}; ${plural(s.compactions, "compaction")}`],
    ["Claude Code transcript", badge(s.claudeTranscript)],
  ];
  const newest = () => [...ui.conversation.querySelectorAll(".rec.user:not([hidden])")].pop()?.scrollIntoView({ block: "start" });
  const exports = ["md", "html", "jsonl"].map((f) => el("a", null, "export ." + f, { href: `api/sessions/${encodeURIComponent(idOf(s))}/export?format=${f}` }));
  const links = el("div", "row links", [...exports, el("button", null, "↓ newest turn", { onclick: newest })]);
  const heading = [el("h2", null, s.title || idOf(s)), ...(s.guard ? [guardBanner(s.guard)] : [])];
  ui.facts.replaceChildren(...heading, ...rows.map(([label, ...value]) => el("div", "row", [el("b", null, label + " "), ...value])), restorePanel(s), links);
}

/** Makes server HTML the client's own: local times, each tool result inside its call's pair. */
function settle(root: Element): void {
  localize(root);
  for (const result of root.querySelectorAll<HTMLElement>(".rec .tool-result[data-tool-use-id]")) {
    const pair = result.closest(".tool-use") ? undefined : pairOf([result.dataset.toolUseId!]);
    const [out, input, status] = [".tool-out", ".tool-input", ".tool-state"].map((c) => pair?.querySelector(c));
    if (!pair || !out || !input || !status) continue;
    const article = result.closest(".rec");
    result.querySelector(".tool-label")?.remove();
    out.append(result);
    const error = result.classList.contains("error");
    status.textContent = error ? "error" : plural((result.textContent || "").replace(/\n+$/, "").split("\n").length, "line");
    pair.classList.toggle("error", error);
    if ((input.textContent + "\n" + result.textContent).split("\n").length > 8) pair.open = false;
    if (article instanceof HTMLElement && !article.querySelector(".text,.tool-result,.tool-use,details,.attachment")) {
      article.hidden = true;
      article.classList.add("paired");
    }
  }
}

function pairOf(ids: string[]): HTMLDetailsElement | undefined {
  return ids.map((id) => document.querySelector<HTMLDetailsElement>(`details.tool-use[data-tool-use-id="${CSS.escape(id)}"]`)).find((d) => d !== null) ??
    undefined;
}

function reveal(uuid: string): void {
  let target = document.getElementById("r-" + uuid);
  if (!target) return;
  target.classList.add("fresh");
  const ids = (target.dataset.toolResults || "").split(" ").filter(Boolean);
  // A record shown inside a tool call's pair: open that pair instead.
  const pair = target.hidden ? pairOf(ids) : undefined;
  if (pair) target = pair;
  for (let p: HTMLElement | null = target; p; p = p.parentElement) if (p instanceof HTMLDetailsElement) p.open = true;
  if (state.query) highlight(target, state.query);
  target.scrollIntoView({ block: "center" });
  flash(target);
}

function flash(node: Element): void {
  node.classList.add("fresh");
  setTimeout(() => node.classList.remove("fresh"), 4000);
}

/** Each session's restore output, kept over reloads (a live record arrived, or the restore itself) and visits. */
const panels = new Map<string, HTMLElement>();

/** Always a dry run first, so nothing is written before the reader has seen what would be. */
function restorePanel(s: ListEntry): HTMLElement {
  const out = panels.get(idOf(s)) ?? el("div");
  panels.set(idOf(s), out);
  const title = "Writes this session where claude --resume finds it; shows what it would do first";
  const start = el("button", null, "Restore into Claude Code…", { id: "restore-plan", title, onclick: () => plan(s, false, out) });
  const lacks = s.claudeTranscript === "behind" ? ": it lacks prompts or answers the mirror holds" : "";
  if (state.planNext === idOf(s)) void plan(s, false, out);
  state.planNext = null;
  return el("div", null, ["Claude Code's transcript " + TRANSCRIPT_IS[s.claudeTranscript] + lacks + ". ", start, out], { id: "restore" });
}

/** A failure or a refusal is shown in `out` (`refused` may add to it) and answers null. */
async function restore(s: ListEntry, options: { dryRun: boolean; force: boolean }, out: HTMLElement, refused?: (reply: RestoreReply) => void) {
  const init = { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(options) };
  const url = "api/sessions/" + encodeURIComponent(idOf(s)) + "/restore";
  const reply = await getJson<RestoreReply>(url, init).catch((e) => ({ ok: false, error: message(e) }) as const);
  if (reply.ok) return reply;
  out.replaceChildren(el("div", "error", reply.error || "refused"));
  if ("outcome" in reply) refused?.(reply);
  return null;
}

/** The dry run, with the button that does it (or, refused, the one that forces it). */
async function plan(s: ListEntry, force: boolean, out: HTMLElement): Promise<void> {
  out.replaceChildren(el("div", null, "Checking…"));
  const answer = await restore(s, { dryRun: true, force }, out, (reply) => {
    if (reply.outcome?.action === "refuse" && !force) {
      out.append(el("button", null, "Replace it anyway (a backup is kept)…", { id: "restore-force", onclick: () => plan(s, true, out) }));
    }
  });
  if (answer === null) return;
  const go = el("button", "go", answer.outcome.action === "create" ? "Restore" : "Back up and replace", { id: "restore-go" });
  go.onclick = async () => {
    go.disabled = true;
    const done = await restore(s, { dryRun: false, force }, out);
    if (done === null) return;
    out.replaceChildren(el("pre", "done", done.lines.join("\n"), { id: "restore-done" }));
    loadSessions().catch(failed("refreshing the list"));
    reload();
  };
  out.replaceChildren(
    el("pre", "plan", answer.lines.join("\n"), { id: "restore-dry" }),
    go,
    el("button", null, "Cancel", { onclick: () => out.replaceChildren() }),
  );
  out.scrollIntoView({ block: "nearest" });
}

let source: EventSource | null = null;
let following: string | null = null;
let listTimer: ReturnType<typeof setTimeout> | undefined;

/** `dir`: a session directory, null: none. */
export function follow(dir: string | null): void {
  if (dir === following) return;
  source?.close();
  following = dir;
  liveSays(dir === null ? "" : "○ connecting");
  if (dir === null) return;
  source = new EventSource("api/events?dir=" + encodeURIComponent(dir));
  source.addEventListener("ready", (e) => {
    liveSays("● live", "on");
    // What was written before the stream opened (or while it was down) is read again.
    if (JSON.parse(e.data).bytes !== state.bytes) reload();
  });
  source.addEventListener("records", (e) => onRecords(JSON.parse(e.data)));
  source.addEventListener("error", () => liveSays("○ reconnecting"));
}

/** A record that continues the open conversation is appended; anything else (a rewind, a retry) changed the tree's shape, so the session is read again. */
function onRecords(batch: LiveEvent): void {
  if (batch.dir !== state.dir) return;
  state.bytes = batch.bytes;
  clearTimeout(listTimer);
  listTimer = setTimeout(() => loadSessions().catch(failed("refreshing the list")), 300);
  if (batch.scope !== "main") return;
  const nearBottom = ui.main.scrollHeight - ui.main.scrollTop - ui.main.clientHeight < 80;
  let changed = false;
  for (const r of batch.records) {
    if (!r.uuid || document.getElementById("r-" + r.uuid)) continue;
    const node = el("template", null, null, { innerHTML: r.html }).content.firstElementChild; // rendered and escaped by the tap
    if ((state.tail !== null && r.parentUuid !== state.tail) || !(node instanceof HTMLElement)) changed = true;
    else {
      ui.conversation.append(node);
      settle(node);
      if (!node.hidden) flash(node);
      state.tail = r.uuid;
    }
  }
  if (changed) reload();
  else if (nearBottom) ui.main.scrollTop = ui.main.scrollHeight;
}
