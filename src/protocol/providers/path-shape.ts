/**
 * A path's shape: what the events log, health, doctor and the viewer may say of a path the tap forwarded
 * without mirroring it (docs/DESIGN.md "Nothing forwarded unseen"). No path is ever logged (docs/DESIGN.md
 * "Trust boundaries"): it can carry a project, an account, a model ARN or a token. A shape keeps only the
 * segments that are words of the APIs' own vocabulary or version names; every other segment becomes `*`.
 * Pure.
 *
 * @example pathShape("/v1/projects/acme-42/locations/us-east5/publishers/anthropic/models/claude-x:streamRawPredict")
 *   // → the same path with the project, the location and the model each as `*`
 */

/** Words of the APIs' paths (Anthropic, Vertex, Bedrock, and the OpenAI-style paths other clients send). */
const WORDS = new Set([
  "api",
  "anthropic",
  "batches",
  "beta",
  "chat",
  "complete",
  "completions",
  "converse",
  "converse-stream",
  "count-tokens",
  "count_tokens",
  "embeddings",
  "files",
  "foundation-models",
  "generateContent",
  "inference-profiles",
  "invoke",
  "invoke-with-response-stream",
  "locations",
  "messages",
  "model",
  "models",
  "openai",
  "predict",
  "projects",
  "publishers",
  "rawPredict",
  "responses",
  "streamGenerateContent",
  "streamRawPredict",
]);
const VERSION = /^v\d{1,2}(?:(?:alpha|beta)\d{0,2})?$/;
/** Segments kept at most; a longer path ends in `/…`. */
const MAX_SEGMENTS = 12;

/** One segment's shape: a known word or version as it is, else `*`. */
function segmentShape(segment: string): string {
  const colon = segment.lastIndexOf(":");
  // A `:verb` (Vertex's) is kept when it is a word of the APIs; any other colon is part of an id (`…-v1:0`).
  if (colon > 0 && WORDS.has(segment.slice(colon + 1))) return `${segmentShape(segment.slice(0, colon))}:${segment.slice(colon + 1)}`;
  return segment === "" || WORDS.has(segment) || VERSION.test(segment) ? segment : "*";
}

/** The shape of `pathname` (no query). */
export function pathShape(pathname: string): string {
  const segments = pathname.split("/").slice(1);
  const kept = segments.slice(0, MAX_SEGMENTS).map(segmentShape);
  return "/" + kept.join("/") + (segments.length > MAX_SEGMENTS ? "/…" : "");
}
