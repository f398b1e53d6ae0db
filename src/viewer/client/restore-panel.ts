/**
 * "Restore into Claude Code" on an open session: the same code as `sessiontap restore` behind the API, and
 * always a dry run first, so nothing is written before the reader has seen what would be (a part of the
 * client: see inline.ts).
 */
import type { RestoreReply, ViewerSession } from "../api-json.ts";
import type { RestorePanel, ViewerApp } from "./viewer-app.ts";

/** The restore part. Self-contained: its source is inlined into the page, and it reaches the rest through `app`. */
export function restorePart(app: ViewerApp): RestorePanel {
  function restorePanel(s: ViewerSession): HTMLElement {
    const box = app.el("div");
    box.id = "restore";
    const out = app.el("div");
    const start = app.el("button", null, "Restore into Claude Code…");
    start.id = "restore-plan";
    start.title = "Writes this session where claude --resume finds it; shows what it would do first";
    start.addEventListener("click", () => plan(s, false, out));
    const state = s.claudeTranscript === "intact" ? "Claude Code's own transcript is intact. " : "Claude Code's transcript is " + s.claudeTranscript + ". ";
    box.append(app.el("span", null, state), start, out);
    return box;
  }

  async function restore(s: ViewerSession, options: { dryRun: boolean; force: boolean }): Promise<RestoreReply> {
    const init = { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body: JSON.stringify(options) };
    return (await app.getJson<RestoreReply>("api/sessions/" + encodeURIComponent(app.idOf(s)) + "/restore", init)).body;
  }
  const failed = (out: HTMLElement, e: unknown) => out.replaceChildren(app.el("div", "error", String((e instanceof Error && e.message) || e)));

  /** Shows the dry run of a restore of `s` in `out`, with the button that does it (or, refused, the one that forces it). */
  async function plan(s: ViewerSession, force: boolean, out: HTMLElement): Promise<void> {
    out.replaceChildren(app.el("div", null, "Checking…"));
    let answer: RestoreReply;
    try {
      answer = await restore(s, { dryRun: true, force: force });
    } catch (e) {
      failed(out, e);
      return;
    }
    if (!answer.ok) {
      out.replaceChildren(app.el("div", "error", answer.error || "refused"));
      if (answer.outcome && answer.outcome.action === "refuse" && !force) {
        const again = app.el("button", null, "Replace it anyway (a backup is kept)…");
        again.id = "restore-force";
        again.addEventListener("click", () => plan(s, true, out));
        out.append(again);
      }
      return;
    }
    const go = app.el("button", "go", answer.outcome.action === "create" ? "Restore" : "Back up and replace");
    go.id = "restore-go";
    const cancel = app.el("button", null, "Cancel");
    cancel.addEventListener("click", () => out.replaceChildren());
    go.addEventListener("click", async () => {
      go.disabled = true;
      let done: RestoreReply;
      try {
        done = await restore(s, { dryRun: false, force: force });
      } catch (e) {
        failed(out, e);
        return;
      }
      if (!done.ok) {
        out.replaceChildren(app.el("div", "error", done.error || "refused"));
        return;
      }
      const result = app.el("pre", "done", done.lines.join("\n"));
      result.id = "restore-done";
      out.replaceChildren(result);
      app.loadSessions().catch(app.failed("refreshing the list"));
    });
    const planText = app.el("pre", "plan", answer.lines.join("\n"));
    planText.id = "restore-dry";
    out.replaceChildren(planText, go, cancel);
  }

  return { restorePanel };
}
