/**
 * `doctor`'s check of what the tap forwarded without mirroring (docs/DESIGN.md "Nothing forwarded unseen"):
 * conversation-shaped requests to paths the tap does not mirror, and requests it refused to forward. A
 * warning, not a failure: the user's traffic is fine, but those conversations are not backed up.
 */
import { isObject } from "../protocol/json.ts";
import type { Check } from "./doctor-check.ts";

/** Shapes listed one by one; the rest are summed up in one line. */
const LISTED = 5;

/** The checks for health's `mirror.notMirrored` (none when nothing went unseen). */
export function unmirroredChecks(health: Record<string, unknown>): Check[] {
  const report = isObject(health.mirror) ? health.mirror.notMirrored : undefined;
  if (!isObject(report) || !Array.isArray(report.shapes)) return [];
  const lines = report.shapes.filter((s): s is { said: string } => isObject(s) && typeof s.said === "string").map((s) => s.said);
  const checks: Check[] = lines.slice(0, LISTED).map((said) => ({
    check: "not mirrored",
    status: "warn",
    detail: `${said}: these conversations are not in the mirror (docs/providers.md)`,
  }));
  if (lines.length > LISTED) checks.push({ check: "not mirrored", status: "warn", detail: `and ${lines.length - LISTED} more path shapes: see /_tap/health` });
  return checks;
}
