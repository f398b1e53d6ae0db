/**
 * `sessiontap list [--json]`: every mirrored session, most recent first, with whether Claude Code's own
 * transcript of it is intact, a stub or missing (SPEC §2).
 */
import type { Config } from "../config/parse.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import type { SessionSource } from "../storage/mirror-reader.ts";
import { SessionCatalog, type ListEntry } from "../storage/session-catalog.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { humanBytes, noMirror, shortTime, type CommandIo } from "./command-io.ts";

/** Every session of the mirror (or of `source`, a shared store) with its Claude Code transcript state, most recent first. */
export function listSessions(fs: FsAdapter, mirrorDir: string, claudeDir: string, source?: SessionSource): Promise<ListEntry[]> {
  return new SessionCatalog(fs, mirrorDir, claudeDir, source).list();
}

/** Runs `list`. */
export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  const entries = await withSessionSource(config, io.fs, (source) => listSessions(io.fs, config.mirrorDir, config.claudeDir, source));
  if (config.json) {
    io.stdout(JSON.stringify(entries, null, 2) + "\n");
    return 0;
  }
  if (entries.length === 0) {
    io.stdout(`No mirrored sessions in ${sourceName(config)}.\n`);
    return 0;
  }
  const rows = entries.map((e) => [
    e.sessionId ?? e.dir, shortTime(e.lastTimestamp), String(e.records), humanBytes(e.bytes), e.claudeTranscriptProblem === null ? e.claudeTranscript : "no-id", e.cwd ?? "-",
  ]);
  const head = ["SESSION", "LAST (UTC)", "RECORDS", "SIZE", "CLAUDE", "CWD"];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]))).join("  ").trimEnd();
  const out = [line(head)];
  entries.forEach((e, i) => {
    out.push(line(rows[i]));
    if (e.firstPrompt !== null) out.push(`  “${e.firstPrompt.length > 100 ? e.firstPrompt.slice(0, 99) + "…" : e.firstPrompt}”`);
  });
  const lost = entries.filter((e) => e.claudeTranscript !== "intact" && e.sessionId !== null && e.claudeTranscriptProblem === null);
  if (lost.length > 0) {
    out.push("", `${lost.length} session${lost.length === 1 ? "" : "s"} whose Claude Code transcript is stubbed or missing; to put one back:`);
    out.push(`  sessiontap restore ${lost[0].sessionId}`);
  }
  const odd = entries.filter((e) => e.claudeTranscriptProblem !== null).length;
  if (odd > 0) out.push("", `${odd} session${odd === 1 ? "" : "s"} (CLAUDE no-id) with an id Claude Code could not have made: readable here, not restorable.`);
  io.stdout(out.join("\n") + "\n");
  return 0;
}
