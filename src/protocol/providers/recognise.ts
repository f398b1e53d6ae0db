// Which API a request speaks, from its method and path alone, and how its answer is framed (docs/DESIGN.md "Providers"). Pure.
import { isObject } from "../json.ts";

export type Provider = "anthropic" | "vertex" | "bedrock";

/** `model` is the path's (Vertex, Bedrock), null where the body names it; `reason` says why an `other` is not mirrored. */
export type Recognised =
  | { kind: "conversation"; provider: Provider; model: string | null }
  | { kind: "count-tokens"; provider: Provider }
  | { kind: "other"; provider: Provider | null; reason: string };

export const UNKNOWN_PATH = "not a path the tap mirrors";

const other = (provider: Provider | null, reason: string): Recognised => ({ kind: "other", provider, reason });

export function recognise(method: string, pathname: string): Recognised {
  if (pathname === "/v1/messages") return method === "POST" ? { kind: "conversation", provider: "anthropic", model: null } : other("anthropic", "not a POST");
  if (pathname === "/v1/messages/count_tokens") return { kind: "count-tokens", provider: "anthropic" };
  const found = vertexPath(pathname) ?? bedrockPath(pathname);
  if (found === null) return other(null, UNKNOWN_PATH);
  return found.kind !== "conversation" || method === "POST" ? found : other(found.provider, "not a POST");
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

// Whatever precedes `/projects/` is the base URL's path (`/v1` with Claude Code's `ANTHROPIC_VERTEX_BASE_URL`).
const VERTEX = /^(?:\/[^/]+)*\/projects\/[^/]+\/locations\/[^/]+\/publishers\/([^/]+)\/models\/([^/:]+):([A-Za-z]+)$/;

function vertexPath(pathname: string): Recognised | null {
  const m = VERTEX.exec(pathname);
  if (m === null) return null;
  const [, publisher, model, verb] = m;
  if (publisher !== "anthropic") return other("vertex", "a Vertex model that is not Anthropic's");
  if (verb !== "rawPredict" && verb !== "streamRawPredict") return other("vertex", "a Vertex method other than rawPredict and streamRawPredict");
  if (model === "count-tokens") return { kind: "count-tokens", provider: "vertex" };
  return { kind: "conversation", provider: "vertex", model: decodeSegment(model) };
}

const BEDROCK = /^(?:\/[^/]+)*\/model\/([^/]+)\/([a-z-]+)$/;

function bedrockPath(pathname: string): Recognised | null {
  const m = BEDROCK.exec(pathname);
  if (m === null) return null;
  const [, model, verb] = m;
  if (verb === "count-tokens") return { kind: "count-tokens", provider: "bedrock" };
  if (verb === "converse" || verb === "converse-stream") return other("bedrock", "Bedrock's Converse API, which the tap does not mirror");
  if (verb !== "invoke" && verb !== "invoke-with-response-stream") return null;
  const decoded = decodeSegment(model);
  // Another vendor's model speaks its own format; an ARN does not say whose model it names.
  if (!decoded.startsWith("arn:") && !/(?:^|\.)anthropic\./.test(decoded)) return other("bedrock", "a Bedrock model that is not Anthropic's");
  return { kind: "conversation", provider: "bedrock", model: decoded };
}

export type Framing = "sse" | "eventstream" | "json";

export function responseFraming(contentType: string | null): Framing {
  const type = (contentType ?? "").toLowerCase();
  if (type.includes("text/event-stream")) return "sse";
  if (type.includes("application/vnd.amazon.eventstream")) return "eventstream";
  return "json";
}

export function responseRequestId(headers: Headers): string | null {
  return headers.get("request-id") || headers.get("x-amzn-requestid");
}

export function looksLikeConversation(bytes: Uint8Array): boolean {
  try {
    const body = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes)) as unknown;
    return isObject(body) && Array.isArray(body.messages);
  } catch {
    return false;
  }
}

// Only the APIs' own words and version names are kept: any other segment may be a project, an account, an ARN or a token.
const WORDS = new Set(
  ("api anthropic batches beta chat complete completions converse converse-stream count-tokens count_tokens embeddings files foundation-models " +
    "generateContent inference-profiles invoke invoke-with-response-stream locations messages model models openai predict projects publishers " +
    "rawPredict responses streamGenerateContent streamRawPredict").split(" "),
);
const VERSION = /^v\d{1,2}(?:(?:alpha|beta)\d{0,2})?$/;
const MAX_SEGMENTS = 12;

function segmentShape(segment: string): string {
  const colon = segment.lastIndexOf(":");
  // A `:verb` (Vertex's) is kept when it is a word of the APIs; any other colon is part of an id (`…-v1:0`).
  if (colon > 0 && WORDS.has(segment.slice(colon + 1))) return `${segmentShape(segment.slice(0, colon))}:${segment.slice(colon + 1)}`;
  return segment === "" || WORDS.has(segment) || VERSION.test(segment) ? segment : "*";
}

export function pathShape(pathname: string): string {
  const segments = pathname.split("/").slice(1);
  return "/" + segments.slice(0, MAX_SEGMENTS).map(segmentShape).join("/") + (segments.length > MAX_SEGMENTS ? "/…" : "");
}
