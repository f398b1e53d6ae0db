/** One session in the main column: its facts, its conversation, a record revealed (a part of the client: see main.ts). */
import type { SessionView as SessionAnswer, ViewerSession } from "../api-json.ts";
import type { SessionView, ViewerApp } from "./viewer-app.ts";
import { badge, el, getJson, guardBanner, idOf, localize, timeEl, tokens, usd } from "./basics.ts";

/** The session part. It reaches the other parts through `app`. */
export function sessionViewPart(app: ViewerApp): SessionView {
  const { state, ui } = app;
  /** Counts navigations: an answer that arrives after a newer navigation began is not shown. */
  let shown = 0;

  /** The facts above the conversation: title, guard banner, ids, times, usage, Claude Code's copy, restore, exports. */
  function facts(s: ViewerSession): void {
    const facts = ui.facts;
    facts.replaceChildren();
    facts.append(el("h2", null, s.title || idOf(s)));
    if (s.guard) facts.append(guardBanner(s.guard));
    const row = (label: string, ...value: Node[]) => {
      const d = el("div", "row");
      d.append(el("b", null, label + " "), ...value);
      facts.append(d);
    };
    const text = (t: string) => document.createTextNode(t);
    row("Session", el("code", null, idOf(s)));
    row("Project", el("code", null, s.cwd || "unknown"), text(s.gitBranch ? " (branch " + s.gitBranch + ")" : ""));
    row("Time", timeEl(s.firstTimestamp), text(" – "), timeEl(s.lastTimestamp));
    const u = s.usage;
    const cost = s.costUSD === null ? "cost unknown (" + (s.models.join(", ") || "no model") + " not all in the price table)" : "≈ " + usd(s.costUSD);
    row(
      "Usage",
      text(
        tokens(u.inputTokens) + " in · " + tokens(u.outputTokens) + " out · " + tokens(u.cacheCreationTokens) + " cache write · " +
          tokens(u.cacheReadTokens) + " cache read · " + cost,
      ),
    );
    const n = (k: number, one: string) => k + " " + one + (k === 1 ? "" : "s");
    row(
      "Conversation",
      text(
        n(s.counts.prompts, "prompt") + " and " + n(s.counts.answers, "answer") + "; " + s.leaves + (s.leaves === 1 ? " leaf; " : " leaves; ") +
          s.compactions + " compaction(s)",
      ),
    );
    const claude = el("span");
    claude.append(badge(s.claudeTranscript));
    row("Claude Code transcript", claude);
    facts.append(app.restorePanel(s));
    const links = el("div", "row links");
    for (const f of ["md", "html", "jsonl"]) {
      const a = el("a", null, "export ." + f);
      a.href = "api/sessions/" + encodeURIComponent(idOf(s)) + "/export?format=" + f;
      links.append(a);
    }
    facts.append(links);
  }

  async function showSession(id: string, uuid?: string | null): Promise<void> {
    const ticket = ++shown;
    const data = (await getJson<SessionAnswer>("api/sessions/" + encodeURIComponent(id))).body;
    // j, j, k in quick succession: the answers may come back in any order, and only the last one counts.
    if (ticket !== shown) return;
    const s = data.session;
    state.current = idOf(s);
    state.dir = s.dir;
    state.tail = data.tail;
    document.body.classList.add("viewing");
    facts(s);
    ui.conversation.innerHTML = data.html; // rendered and escaped by the tap
    settle(ui.conversation);
    app.renderSessions();
    const active = ui.sessions.querySelector("li.active a");
    if (active && document.activeElement !== ui.search) active.scrollIntoView({ block: "nearest" });
    if (uuid) reveal(uuid);
    else ui.main.scrollTop = ui.main.scrollHeight;
  }

  function settle(root: Element): void {
    localize(root);
    pairResults(root);
  }
  /** The tool call whose id is `id` (or one of `ids`) in the shown conversation. */
  function pairOf(match: (id: string | undefined) => boolean): HTMLDetailsElement | undefined {
    return [...document.querySelectorAll<HTMLDetailsElement>("details.tool-use")].find((d) => match(d.dataset.toolUseId));
  }
  /** Moves each tool result into its call's <details>, so a call and its result read as one pair. */
  function pairResults(root: Element): void {
    for (const result of root.querySelectorAll<HTMLElement>(".rec .tool-result[data-tool-use-id]")) {
      if (result.closest(".tool-use")) continue;
      const id = result.dataset.toolUseId;
      const pair = pairOf((d) => d === id);
      const out = pair?.querySelector(".tool-out");
      const input = pair?.querySelector(".tool-input");
      const status = pair?.querySelector(".tool-state");
      if (!pair || !out || !input || !status) continue;
      const article = result.closest(".rec");
      result.querySelector(".tool-label")?.remove();
      out.append(result);
      const lines = (input.textContent + "\n" + result.textContent).split("\n").length;
      const error = result.classList.contains("error");
      status.textContent = error ? "error" : ((result.textContent || "").replace(/\n+$/, "").split("\n").length + " lines");
      if (error) pair.classList.add("error");
      if (lines > 8) pair.open = false;
      if (article instanceof HTMLElement && !article.querySelector(".text,.tool-result,.tool-use,details,.attachment")) {
        article.hidden = true;
        article.classList.add("paired");
      }
    }
  }
  function reveal(uuid: string): void {
    let target = document.getElementById("r-" + uuid);
    if (!target) return;
    target.classList.add("fresh");
    if (target.hidden) {
      // A record shown inside a tool call's pair: open that pair instead.
      const ids = (target.dataset.toolResults || "").split(" ").filter(Boolean);
      const pair = pairOf((d) => d !== undefined && ids.includes(d));
      if (pair) {
        pair.open = true;
        target = pair;
      }
    }
    for (let p = target.parentElement; p; p = p.parentElement) if (p instanceof HTMLDetailsElement) p.open = true;
    if (state.query) app.highlight(target, state.query);
    target.scrollIntoView({ block: "center" });
    flash(target);
  }
  function flash(node: Element): void {
    node.classList.add("fresh");
    setTimeout(() => node.classList.remove("fresh"), 4000);
  }

  return { showSession, settle, flash };
}
