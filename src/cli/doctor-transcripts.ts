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
import { lackingWords } from "../transcript/transcript-state.ts";
import { SessionCatalog } from "../catalog/session-catalog.ts";
import type { Check } from "./doctor-check.ts";
import type { CommandIo } from "./command-io.ts";
import { isObject } from "../protocol/json.ts";
import { scrubLine } from "../transcript/records.ts";
import { plural } from "../utils/plural.ts";

/** Sessions younger than this count as recent. */
export const RECENT_DAYS = 30;

/**
 * Recent sessions whose Claude Code transcript is missing, a stub, behind the mirror or torn, as the one judge says,
 * with the command that restores each. A session in `alerted` is left out: the tap's guard alert for it says the same, once.
 */
export async function transcriptChecks(config: Readonly<Config>, io: CommandIo, alerted: ReadonlySet<string> = new Set()): Promise<Check[]> {
  const since = io.clock() - RECENT_DAYS * 86_400_000;
  const catalog = new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, undefined, undefined, io.clock);
  const sessions = (await catalog.judged()).filter(({ entry: s }) =>
    s.sessionId !== null && s.lastTimestamp !== null && Date.parse(s.lastTimestamp) >= since && s.counts.prompts + s.counts.answers > 0 &&
    !alerted.has(s.sessionId)
  );
  const out: Check[] = [];
  const warn = (detail: string) => out.push({ check: "transcripts", status: "warn", detail });
  // An id Claude Code could not have made is never looked up in its tree (docs/DESIGN.md "Trust boundaries").
  const odd = sessions.filter((s) => s.entry.claudeTranscriptProblem !== null);
  if (odd.length > 0) {
    warn(
      `${odd.length} mirrored session${odd.length === 1 ? " has an id" : "s have ids"} Claude Code could not have made (${
        odd[0].entry.dir
      }…): readable with show/export, not restorable`,
    );
  }
  for (const { entry: s } of sessions.filter((x) => x.entry.claudeTranscriptWarning !== null).slice(0, 20)) {
    warn(
      `${s.sessionId}: ${
        scrubLine(s.claudeTranscriptWarning!)
      } — where Claude Code keeps its transcript; move it away, then: sessiontap restore ${s.sessionId}`,
    );
  }
  const plain = sessions.filter((x) => x.entry.claudeTranscriptProblem === null && x.entry.claudeTranscriptWarning === null);
  for (const { entry: s, info } of plain.filter((x) => x.info.state !== "intact").slice(0, 20)) {
    const where = `${s.sessionId} (${s.lastTimestamp}, ${shownCwd(s.cwd)}): Claude Code's transcript`;
    const cwd = s.cwd === null ? " --cwd DIR (the directory you run claude in)" : "";
    if (info.state === "behind") {
      out.push({
        check: "transcripts",
        status: "fail",
        detail: `${where} is behind the mirror: it lacks ${
          lackingWords(info.verdict.lacking)
        } of the session's current branch (cut, or deleted and started afresh); quit Claude Code, then: sessiontap restore ${s.sessionId} (a backup is kept)`,
      });
    } else {
      out.push({
        check: "transcripts",
        status: info.state === "stub" ? "fail" : "warn",
        detail: `${where} is ${info.state === "stub" ? "a stub" : "missing"}; restore it: sessiontap restore ${s.sessionId}${cwd}`,
      });
    }
  }
  for (const { entry: s, info } of plain.filter((x) => x.info.state === "intact").slice(0, 20)) {
    if (info.verdict.lacking.prompts + info.verdict.lacking.answers > 0) {
      warn(
        `${s.claudeTranscriptPath} lacks ${lackingWords(info.verdict.lacking)} of the mirror's current branch but holds ${
          plural(info.verdict.extra, "prompt or answer", "prompts or answers")
        } the mirror does not: compare with sessiontap show ${s.sessionId}; sessiontap restore ${s.sessionId} --force replaces it (a backup is kept)`,
      );
    } else if (info.facts?.torn) {
      warn(
        `${s.claudeTranscriptPath} ends in a torn line (a record cut off mid-write; the next one Claude Code appends is lost with it); quit Claude Code, then: sessiontap restore ${s.sessionId} --force (a backup is kept)`,
      );
    }
  }
  if (out.length === (odd.length > 0 ? 1 : 0)) {
    out.push({
      check: "transcripts",
      status: "ok",
      detail: `Claude Code's transcript is whole for all ${plural(sessions.length - odd.length, "session")} mirrored in the last ${RECENT_DAYS} days`,
    });
  }
  return out;
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
