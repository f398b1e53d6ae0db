/** The health problem of an upstream whose last attempt failed: one home for its wording (health, the proxy's upstreams). */
import type { AlarmState } from "./alarm.ts";
import { plural } from "./plural.ts";

/** What health shows of an upstream: its URL and its alarm. */
export interface UpstreamState extends AlarmState {
  url: string;
}

/** `[problem]` while the upstream's last attempt failed, else `[]`. */
export function upstreamProblems(s: UpstreamState): string[] {
  const attempts = plural(s.consecutiveFailures, "attempt");
  return s.failing ? [`upstream: ${new URL(s.url).host} failing since ${s.failingSince} (${attempts}; ${s.lastError})`] : [];
}
