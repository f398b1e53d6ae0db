/**
 * What the relay does when it refuses a request rather than forward it
 * (docs/DESIGN.md "Bedrock's signatures"): the client has its answer already (an error saying what works
 * instead); the user hears it once per reason on stderr, and the engine counts it and logs it
 * (docs/DESIGN.md "Nothing forwarded unseen"). Nothing of the request but its path's shape is said.
 */
import type { Refusal } from "../protocol/providers/aws-signature.ts";
import type { EngineLink } from "./engine-link.ts";

/** The `refused` hook of forward(): one stderr line per reason, and a count and an events-log line per request. */
export function refusalNotice(stderr: (line: string) => void, link: EngineLink | null): (refusal: Refusal, shape: string) => void {
  const said = new Set<string>();
  return (refusal, shape) => {
    if (!said.has(refusal.reason)) {
      said.add(refusal.reason);
      stderr(`sessiontap: refused a request to ${shape}: ${refusal.message}`);
    }
    link?.unseen(shape, refusal.reason, { skipped: "refused" }, true);
  };
}
