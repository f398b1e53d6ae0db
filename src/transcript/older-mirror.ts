/**
 * Mirror records written before the tap wrote Claude Code's own `version` and left unknown fields out
 * (docs/DESIGN.md "Readable by other tools"): `version: "sessiontap/0.1.0"` and `cwd`, `sessionId` or
 * `requestId` as null. Every command reads them as today's records, so a restore from an old mirror
 * writes a transcript every reader accepts. Only the tap's own records are touched (`source:"sessiontap"`,
 * the provenance mark every mirror record has carried): Claude Code's transcripts are read as they are.
 * Pure.
 */
import type { Rec } from "./records.ts";

const OLD_VERSION = /^sessiontap\/(\S+)$/;
/** Fields a reader of Claude Code's files refuses as null; an old mirror wrote them null when unknown. */
const NEVER_NULL = ["cwd", "sessionId", "requestId"] as const;

/** `r` as the tap writes it now (changed in place, and returned). */
export function upgradeOlderRecord(r: Rec): Rec {
  if (r.source !== "sessiontap") return r;
  if (typeof r.version === "string") {
    const old = OLD_VERSION.exec(r.version);
    if (old !== null) r.version = old[1];
  }
  for (const key of NEVER_NULL) if (r[key] === null) delete r[key];
  return r;
}
