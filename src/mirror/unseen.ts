// Requests forwarded and not mirrored, by path shape and reason (docs/DESIGN.md "Nothing forwarded unseen"): a POST whose body looks like a conversation on a
// path the tap does not mirror, and a request the tap refused to forward.
import type { EventFields } from "../storage/events-log.ts";
import type { BodyCopy } from "./messages.ts";
import { looksLikeConversation } from "../protocol/providers/recognise.ts";

/** One shape's count, as health shows it. */
export interface UnseenShape {
  shape: string;
  reason: string;
  requests: number;
  /** The tap answered these itself (they never reached the upstream). */
  refused: boolean;
  /** The one line doctor and the viewer show for it: "12 requests to /v2/messages forwarded, not mirrored (why)". */
  said: string;
}

/** What health shows: the total, and the shapes that make it up, most requests first. */
export interface UnseenReport {
  requests: number;
  shapes: UnseenShape[];
}

/** Shapes kept apart at most; later ones are counted together, so memory stays bounded whatever paths arrive. */
const MAX_SHAPES = 64;
const OTHER_SHAPES = "(other paths)";

/** The counter of requests forwarded unseen. */
export class UnseenRequests {
  private readonly shapes = new Map<string, Omit<UnseenShape, "said">>();
  private total = 0;

  constructor(private readonly log: (action: string, fields: EventFields) => void) {}

  /** Hears one request the mirror did not follow; counts it when it is refused or its body looks like a conversation. */
  note(shape: string, reason: string, copy: BodyCopy, refused: boolean): void {
    if (!refused && !("bytes" in copy && looksLikeConversation(copy.bytes))) return;
    const key = `${refused ? "refused" : "forwarded"} ${shape} ${reason}`;
    let entry = this.shapes.get(key);
    if (entry === undefined && this.shapes.size >= MAX_SHAPES) {
      entry = this.shapes.get(OTHER_SHAPES);
      if (entry === undefined) {
        this.shapes.set(OTHER_SHAPES, entry = { shape: OTHER_SHAPES, reason: "more shapes than health lists", requests: 0, refused: false });
      }
    }
    const first = entry === undefined;
    if (entry === undefined) this.shapes.set(key, entry = { shape, reason, requests: 0, refused });
    entry.requests++;
    this.total++;
    if (refused) this.log("refuse", { shape, reason, refused: entry.requests });
    else if (first) this.log("unmirrored", { shape, reason, note: "a conversation-shaped request forwarded, not mirrored; counted in health from now on" });
  }

  /** What health shows. */
  report(): UnseenReport {
    const shapes = [...this.shapes.values()].sort((a, b) => b.requests - a.requests);
    return { requests: this.total, shapes: shapes.map((s) => ({ ...s, said: said(s) })) };
  }
}

/** What one shape's count says. */
function said(s: Omit<UnseenShape, "said">): string {
  const n = `${s.requests} request${s.requests === 1 ? "" : "s"}`;
  return s.refused ? `${n} to ${s.shape} refused, not forwarded (${s.reason})` : `${n} to ${s.shape} forwarded, not mirrored (${s.reason})`;
}
