// Reading Claude Code's injected context back from its words (src/transcript/context-kinds.ts): every
// rendered attachment in the real transcripts of 2.1.328 and 2.1.332 (two models) reads back as the kind,
// role and what-it-was-made-from Claude Code recorded for it, so a resume announces nothing again.
// Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { contextPiece, interleave, reminderInner, systemPieces, UNKNOWN_KIND } from "../../src/transcript/context-kinds.ts";
import { capturedTranscript } from "../support/captures.ts";
import type { Rec } from "../support/claude.ts";

const CAPTURES = [
  "cc-2.1.328-tool-session",
  "cc-2.1.328-interactive-compact-rewind",
  "cc-2.1.332-tool-session/default-model",
  "cc-2.1.332-tool-session/sonnet-4-5",
];
/** What Claude Code keeps of a kind that the wire does not say (a hash of each skill, which agent types are built in). */
const UNSAID: Record<string, string[]> = { skill_listing: ["digests"], agent_listing_delta: ["builtInTypes", "builtInPluginTypes"] };

/** An attachment less its empty lists: Claude Code reads a list it does not find as an empty one. */
const withoutEmpty = (a: Rec): Rec => Object.fromEntries(Object.entries(a).filter(([, v]) => !(Array.isArray(v) && v.length === 0)));

/** Claude Code's own attachment records that it renders (those the wire carries), from every capture. */
const rendered = CAPTURES.flatMap((c) =>
  capturedTranscript(c).filter((r: Rec) => r.type === "attachment" && Array.isArray(r.rendered) && r.rendered.length === 1).map((r: Rec) => ({ capture: c, r }))
);

describe("contextPiece()", () => {
  it("reads every rendered attachment of the real transcripts back as Claude Code recorded it", () => {
    assert.ok(rendered.length >= 30, `${rendered.length} rendered attachments in the captures`);
    for (const { capture, r } of rendered) {
      const text: string = r.rendered[0].content;
      const inner = reminderInner(text);
      assert.notEqual(inner, null, `${capture} ${r.attachment.type}: one whole reminder`);
      const piece = contextPiece(inner!, "user");
      const where = `${capture} ${r.attachment.type}`;
      assert.equal(piece.attachment.type, r.attachment.type, where);
      assert.equal(piece.renderedRole, r.renderedRole, where);
      assert.equal(piece.besideToolResult === true, r.renderedBesideToolResult === true, where);
      assert.equal(piece.rendered, text, `${where}: the text as sent`);
      const expected = withoutEmpty(r.attachment);
      for (const key of UNSAID[r.attachment.type] ?? []) delete expected[key];
      assert.deepEqual(withoutEmpty(piece.attachment), expected, where);
    }
  });

  it("keeps a reminder it does not recognise, or whose words do not read back, as a piece of unknown kind in its place", () => {
    for (const inner of ["The user opened a file in the IDE.", "You are powered by the model in some new words.", "Today's date is tomorrow."]) {
      assert.deepEqual(contextPiece(inner, "user"), {
        attachment: { type: UNKNOWN_KIND },
        renderedRole: "user",
        rendered: `<system-reminder>\n${inner}\n</system-reminder>`,
      });
      assert.equal(contextPiece(inner, "system").renderedRole, "system");
    }
    assert.equal(reminderInner("<system-reminder>\na\n</system-reminder>\n<system-reminder>\nb\n</system-reminder>"), null, "two reminders are not one");
    assert.equal(reminderInner("typed text"), null);
  });
});

describe("systemPieces()", () => {
  it("cuts a role:system message where Claude Code joined its pieces, keeping each piece's text", () => {
    const parts = rendered.filter(({ r }) => r.renderedRole === "system" && r.attachment.type !== "total_tokens_reminder").slice(0, 6).map(({ r }) =>
      reminderInner(r.rendered[0].content)!
    );
    const joined = [...parts.slice(0, 3), "An unknown kind of context.", ...parts.slice(3)].join("\n\n");
    const pieces = systemPieces(joined);
    assert.equal(pieces.length, parts.length, "the unknown part stays with the one before it");
    assert.equal(pieces.map((p) => reminderInner(p.rendered)).join("\n\n"), joined, "nothing is lost or added");
    assert.ok(pieces[2].rendered.endsWith("An unknown kind of context.\n</system-reminder>"), "and is sent with it");
    assert.ok(pieces.every((p) => p.renderedRole === "system"));
  });
});

describe("interleave()", () => {
  it("merges a turn's user-side and system-side pieces in the order Claude Code announces a first turn", () => {
    const piece = (type: string, role: "user" | "system") => ({ attachment: { type }, renderedRole: role, rendered: type });
    const user = [piece("session_context", "user"), piece("remote_session_change", "user")];
    const system = [piece("environment", "system"), piece("model", "system"), piece("skill_listing", "system"), piece("date", "system")];
    assert.deepEqual(interleave(user, system).map((p) => p.attachment.type), [
      "environment",
      "model",
      "skill_listing",
      "session_context",
      "date",
      "remote_session_change",
    ]);
    assert.deepEqual(interleave([piece(UNKNOWN_KIND, "user")], []).map((p) => p.attachment.type), [UNKNOWN_KIND]);
  });
});
