/**
 * Google Vertex AI's paths for Claude (docs/DESIGN.md "Providers"). The Anthropic SDK's Vertex client moves
 * the model out of the body into the path, `…/projects/P/locations/R/publishers/anthropic/models/MODEL:VERB`,
 * with `:streamRawPredict` for a streamed answer (the Messages API's server-sent events) and `:rawPredict`
 * for one JSON answer; counting tokens is the model `count-tokens`. Whatever comes before `/projects/` is
 * the base URL's path (`/v1` with Claude Code's `ANTHROPIC_VERTEX_BASE_URL=…/v1`). Pure.
 */
import { decodeSegment, type Recognised } from "./recognised.ts";

const PATH = /^(?:\/[^/]+)*\/projects\/[^/]+\/locations\/[^/]+\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/;

/** What a Vertex path asks for, or null when the path is not Vertex's. */
export function vertexPath(pathname: string): Recognised | null {
  const m = PATH.exec(pathname);
  if (m === null) return null;
  const [, publisher, model, verb] = m;
  if (publisher !== "anthropic") return { kind: "other", provider: "vertex", reason: "a Vertex model that is not Anthropic's" };
  if (verb !== "rawPredict" && verb !== "streamRawPredict") {
    return { kind: "other", provider: "vertex", reason: "a Vertex method other than rawPredict and streamRawPredict" };
  }
  if (model === "count-tokens") return { kind: "count-tokens", provider: "vertex" };
  return { kind: "conversation", provider: "vertex", model: decodeSegment(model) };
}
