/**
 * doctor's checks of Claude Code's transcripts against the mirror, and of the guard that watches them live:
 *
 * - a recent session the mirror has whose transcript is a stub (fail) or missing (warn);
 * - one whose transcript is behind the mirror: it lacks prompts of the session's current branch (the file
 *   was cut, or deleted and started afresh; a prompt rewound away is not expected, docs/GUARD.md) (fail);
 * - one whose transcript ends in a torn line, a record cut off mid-write: the next record Claude Code
 *   appends is glued to it and lost too (warn);
 * - the guard of the tap Claude Code uses: off (warn), or its count of sessions whose transcript it never
 *   found (warn: the tap may look in another config dir). Its alerts come as health problems (doctor.ts).
 *
 * Each names the command that fixes it. Only the most recent sessions are read whole.
 */
import type { Config } from "../config/parse.ts";
import { mirroredPrompts, promptKey } from "../guard/prompts.ts";
import { parseLine } from "../guard/transcript-lines.ts";
import { scanTranscript } from "../storage/claude-projects.ts";
import { restorePath } from "../transcript/restore-plan.ts";
import { buildTree } from "../transcript/tree.ts";
import { describe } from "../utils/describe-error.ts";
import { type ListEntry, SessionCatalog } from "../catalog/session-catalog.ts";
import type { Check } from "./doctor-check.ts";
import type { CommandIo } from "./command-io.ts";
import { isObject } from "../protocol/json.ts";
import { scrubLine } from "../transcript/control-chars.ts";
import { plural } from "../utils/plural.ts";

/** Sessions younger than this count as recent. */
export const RECENT_DAYS = 30;
/** Most recent sessions whose transcripts are read whole. */
const READ_AT_MOST = 50;

/** What a session's transcript says against the mirror. */
interface Compared {
  entry: ListEntry;
  lacking: number;
  prompts: number;
  torn: boolean;
  /** Why the transcript could not be read, when it could not. */
  error: string | null;
}

/**
 * Recent sessions the mirror has but Claude Code lost, lacks prompts of, or holds torn; with the command that
 * restores each. A session in `alerted` is left out: the tap's guard alert for it says the same, once.
 */
export async function transcriptChecks(config: Readonly<Config>, io: CommandIo, alerted: ReadonlySet<string> = new Set()): Promise<Check[]> {
  const since = io.clock() - RECENT_DAYS * 86_400_000;
  const catalog = new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir);
  const sessions = (await catalog.list())
    .filter((s) => s.sessionId !== null && s.lastTimestamp !== null && Date.parse(s.lastTimestamp) >= since && s.userRecords + s.assistantRecords > 0)
    .filter((s) => !alerted.has(s.sessionId!));
  const out: Check[] = [];
  // An id Claude Code could not have made is never looked up in its tree (docs/DESIGN.md "Trust boundaries").
  const odd = sessions.filter((s) => s.claudeTranscriptProblem !== null);
  if (odd.length > 0) {
    out.push({
      check: "transcripts",
      status: "warn",
      detail: `${odd.length} mirrored session${odd.length === 1 ? " has an id" : "s have ids"} Claude Code could not have made (${
        odd[0].dir
      }…): readable with show/export, not restorable`,
    });
  }
  for (const s of sessions.filter((x) => x.claudeTranscriptWarning !== null).slice(0, 20)) {
    out.push({
      check: "transcripts",
      status: "warn",
      detail: `${s.sessionId}: ${
        scrubLine(s.claudeTranscriptWarning!)
      } — where Claude Code keeps its transcript; move it away, then: sessiontap restore ${s.sessionId}`,
    });
  }
  for (
    const s of sessions.filter((x) => x.claudeTranscript !== "intact" && x.claudeTranscriptProblem === null && x.claudeTranscriptWarning === null)
      .slice(0, 20)
  ) {
    out.push({
      check: "transcripts",
      status: s.claudeTranscript === "stub" ? "fail" : "warn",
      detail: `${s.sessionId} (${s.lastTimestamp}, ${shownCwd(s.cwd)}): Claude Code's transcript is ${
        s.claudeTranscript === "stub" ? "a stub" : "missing"
      }; restore it: sessiontap restore ${s.sessionId}${s.cwd === null ? " --cwd DIR (the directory you run claude in)" : ""}`,
    });
  }
  const compared: Compared[] = [];
  for (const entry of sessions.filter((x) => x.claudeTranscript === "intact" && x.claudeTranscriptPath !== null).slice(0, READ_AT_MOST)) {
    compared.push(await compare(io, catalog, entry));
  }
  for (const c of compared.filter((x) => x.lacking > 0)) {
    out.push({
      check: "transcripts",
      status: "fail",
      detail: `${c.entry.sessionId} (${c.entry.lastTimestamp}, ${
        shownCwd(c.entry.cwd)
      }): Claude Code's transcript lacks ${c.lacking} of the ${c.prompts} prompts the mirror holds (cut, or deleted and started afresh); quit Claude Code, then: sessiontap restore ${c.entry.sessionId} --force (a backup is kept)`,
    });
  }
  for (const c of compared.filter((x) => x.error !== null)) {
    out.push({
      check: "transcripts",
      status: "warn",
      detail: `${c.entry.claudeTranscriptPath} could not be read (${c.error}); doctor cannot tell whether it is whole`,
    });
  }
  for (const c of compared.filter((x) => x.torn && x.lacking === 0)) {
    out.push({
      check: "transcripts",
      status: "warn",
      detail:
        `${c.entry.claudeTranscriptPath} ends in a torn line (a record cut off mid-write; the next one Claude Code appends is lost with it); quit Claude Code, then: sessiontap restore ${c.entry.sessionId} --force (a backup is kept)`,
    });
  }
  if (out.length === (odd.length > 0 ? 1 : 0)) {
    const count = sessions.length - odd.length;
    out.push({
      check: "transcripts",
      status: "ok",
      detail: `Claude Code's transcript is whole for all ${plural(count, "session")} mirrored in the last ${RECENT_DAYS} days`,
    });
  }
  return out;
}

/**
 * Reads one session's whole transcript, line by line with bounded memory (a 2 GiB transcript must not
 * run doctor out of memory), and compares its prompts with the mirror's. A user line too long to hold may
 * be a prompt doctor cannot see: it is not counted as lacking (never a false alarm).
 */
async function compare(io: CommandIo, catalog: SessionCatalog, entry: ListEntry): Promise<Compared> {
  const held = new Set<string>();
  let unseen = 0;
  let torn: boolean;
  try {
    ({ torn } = await scanTranscript(io.fs, entry.claudeTranscriptPath!, (line) => {
      if (line.oversized) {
        const head = new TextDecoder().decode(line.head);
        if (/"type":"user"/.test(head) && !/"tool_use_id"|"tool_result"/.test(head)) unseen++;
        return;
      }
      for (const key of parseLine(line.bytes)?.keys ?? []) held.add(key);
    }));
  } catch (error) {
    return { entry, lacking: 0, prompts: 0, torn: false, error: describe(error) };
  }
  // The current branch, compactions followed back: what a restore writes, and so what the transcript must hold.
  const prompts = mirroredPrompts(restorePath(buildTree((await catalog.reader.load(entry.dir)).records)));
  const distinct = new Map(prompts.map((p) => [p.candidates.join("\n"), p.candidates]));
  const lacking = [...distinct.values()].filter((candidates) => !candidates.some((t) => held.has(promptKey(t)))).length;
  return { entry, lacking: Math.max(0, lacking - unseen), prompts: distinct.size, torn, error: null };
}

/** The guard of the tap doctor found (its alerts are health problems, reported with the others). */
export function guardCheck(health: Record<string, unknown>): Check[] {
  const guard = health.guard;
  if (guard === undefined) return [];
  if (guard === "off") {
    return [{
      check: "guard",
      status: "warn",
      detail:
        "off in the tap (SESSIONTAP_GUARD=off, or no Claude Code config dir where it runs): a lost transcript is only found when doctor runs; SESSIONTAP_GUARD=on turns it on",
    }];
  }
  if (!isObject(guard)) return [];
  const watching = Number(guard.watching ?? 0);
  const notFound = Number(guard.notFound ?? 0);
  // Each alert is a FAIL line of its own (a health problem): no "ok" line beside it for the same fact.
  if (alertedSessions(health).size > 0) return [];
  if (notFound > 0) {
    return [{
      check: "guard",
      status: "warn",
      detail: `the tap has not found Claude Code's transcript of ${
        plural(notFound, "session")
      } it mirrors: does it look in the config dir Claude Code uses (serve --claude-dir / CLAUDE_CONFIG_DIR)?`,
    }];
  }
  return [{
    check: "guard",
    status: "ok",
    detail: `watching ${plural(watching, "active session")}, no alert`,
  }];
}

/** The sessions the tap's guard has an alert for, from its health. */
export function alertedSessions(health: Record<string, unknown> | null): Set<string> {
  const guard = health?.guard;
  if (!isObject(guard) || !Array.isArray(guard.alerts)) return new Set();
  return new Set(guard.alerts.flatMap((a) => (isObject(a) && typeof a.sessionId === "string" ? [a.sessionId] : [])));
}

/** A session's cwd as doctor prints it: it comes from a request, so never with a control character or a line break. */
function shownCwd(cwd: string | null): string {
  return cwd === null ? "cwd unknown" : scrubLine(cwd);
}
