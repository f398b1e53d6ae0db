/**
 * "Restore into Claude Code" on an open session: the same code as `sessiontap restore` behind the API, and
 * always a dry run first, so nothing is written before the reader has seen what would be (a part of the
 * client: see main.ts).
 */
import type { RestoreReply, ViewerSession } from "../api-json.ts";
import type { RestorePanel, ViewerApp } from "./viewer-app.ts";
import { el, getJson, idOf } from "./basics.ts";

/** The restore part. It reaches the other parts through `app`. */
export function restorePart(app: ViewerApp): RestorePanel {
  /** What the last restore of a session said, shown again in the page reloaded after it. */
  const done = new Map<string, string[]>();

  function restorePanel(s: ViewerSession): HTMLElement {
    const box = el("div");
    box.id = "restore";
    const out = el("div");
    const start = el("button", null, "Restore into Claude Code…");
    start.id = "restore-plan";
    start.title = "Writes this session where claude --resume finds it; shows what it would do first";
    start.addEventListener("click", () => plan(s, false, out));
    const state = s.claudeTranscript === "intact"
      ? "Claude Code's own transcript is intact. "
      : s.claudeTranscript === "stub"
      ? "Claude Code's transcript is a stub. "
      : s.claudeTranscript === "behind"
      ? "Claude Code's transcript is behind the mirror: it lacks prompts or answers the mirror holds. "
      : "Claude Code's transcript is " + s.claudeTranscript + ". ";
    box.append(el("span", null, state), start, out);
    const said = done.get(idOf(s));
    if (said !== undefined) out.replaceChildren(doneNote(said));
    return box;
  }

  /**
   * Asks for a restore of `s` (or its dry run). A failure or a refusal is shown in `out` and answers null;
   * `refused` may add to what a refusal shows.
   */
  async function restore(
    s: ViewerSession,
    options: { dryRun: boolean; force: boolean },
    out: HTMLElement,
    refused?: (reply: Extract<RestoreReply, { ok: false }>) => void,
  ): Promise<Extract<RestoreReply, { ok: true }> | null> {
    const init = { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(options) };
    let reply: RestoreReply;
    try {
      reply = (await getJson<RestoreReply>("api/sessions/" + encodeURIComponent(idOf(s)) + "/restore", init)).body;
    } catch (e) {
      out.replaceChildren(el("div", "error", String((e instanceof Error && e.message) || e)));
      return null;
    }
    if (reply.ok) return reply;
    out.replaceChildren(el("div", "error", reply.error || "refused"));
    if (refused) refused(reply);
    return null;
  }

  /** Shows the dry run of a restore of `s` in `out`, with the button that does it (or, refused, the one that forces it). */
  async function plan(s: ViewerSession, force: boolean, out: HTMLElement): Promise<void> {
    out.replaceChildren(el("div", null, "Checking…"));
    const answer = await restore(s, { dryRun: true, force: force }, out, (reply) => {
      if (!reply.outcome || reply.outcome.action !== "refuse" || force) return;
      const again = el("button", null, "Replace it anyway (a backup is kept)…");
      again.id = "restore-force";
      again.addEventListener("click", () => plan(s, true, out));
      out.append(again);
    });
    if (answer === null) return;
    const go = el("button", "go", answer.outcome.action === "create" ? "Restore" : "Back up and replace");
    go.id = "restore-go";
    const cancel = el("button", null, "Cancel");
    cancel.addEventListener("click", () => out.replaceChildren());
    go.addEventListener("click", async () => {
      go.disabled = true;
      const answer = await restore(s, { dryRun: false, force: force }, out);
      if (answer === null) return;
      out.replaceChildren(doneNote(answer.lines));
      // The page shows the state after the restore (Claude Code's copy, the guard's banner): the tap has
      // looked at the restored transcript before it answered.
      done.set(idOf(s), answer.lines);
      app.loadSessions().catch(app.failed("refreshing the list"));
      app.showSession(idOf(s)).catch(app.failed("reloading the session"));
    });
    const planText = el("pre", "plan", answer.lines.join("\n"));
    planText.id = "restore-dry";
    out.replaceChildren(planText, go, cancel);
  }

  /** What a restore did, as the panel shows it. */
  function doneNote(lines: string[]): HTMLElement {
    const result = el("pre", "done", lines.join("\n"));
    result.id = "restore-done";
    return result;
  }

  return { restorePanel };
}
