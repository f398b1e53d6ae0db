/**
 * What the tap makes of a request from its method and path (docs/DESIGN.md "Providers"): the vocabulary
 * recognise.ts and each provider's rules share. Pure.
 */

/** The APIs the tap knows. */
export type Provider = "anthropic" | "vertex" | "bedrock";

/** What a request is, as far as the mirror cares. */
export type Recognised =
  /** A turn of a conversation: mirrored. `model` is the path's (Vertex, Bedrock); null where the body names it. */
  | { kind: "conversation"; provider: Provider; model: string | null }
  /** Counts tokens of a conversation: forwarded, and neither mirrored nor counted as unseen. */
  | { kind: "count-tokens"; provider: Provider }
  /** Anything else: forwarded; `reason` says why it is not mirrored, should its body look like a conversation. */
  | { kind: "other"; provider: Provider | null; reason: string };

/** A path segment decoded (`%3A` → `:`), or as it is when it does not decode. */
export function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
