/**
 * Which API a request speaks and what it asks for, from its method and path alone (docs/DESIGN.md
 * "Providers"): the Anthropic Messages API, Google Vertex AI, or AWS Bedrock. Pure, so the relay can ask it
 * of every request and proxy mode of every host it terminates. The session is never read here: it comes
 * from the same headers and body on every provider (docs/DESIGN.md "The mirror").
 */
import { bedrockPath } from "./bedrock.ts";
import type { Provider, Recognised } from "./recognised.ts";
import { vertexPath } from "./vertex.ts";

export type { Provider, Recognised };

/** The reason given for a path the tap does not know. */
export const UNKNOWN_PATH = "not a path the tap mirrors";
/** The reason given for a conversation's path asked with another method than POST. */
const NOT_POST = "not a POST";

/** Recognises a request by its method and path (no query: it never decides anything). */
export function recognise(method: string, pathname: string): Recognised {
  if (pathname === "/v1/messages") {
    return method === "POST" ? { kind: "conversation", provider: "anthropic", model: null } : other("anthropic", NOT_POST);
  }
  if (pathname === "/v1/messages/count_tokens") return { kind: "count-tokens", provider: "anthropic" };
  const found = vertexPath(pathname) ?? bedrockPath(pathname);
  if (found === null) return other(null, UNKNOWN_PATH);
  if (found.kind !== "conversation" || method === "POST") return found;
  return other(found.provider, NOT_POST);
}

function other(provider: Provider | null, reason: string): Recognised {
  return { kind: "other", provider, reason };
}
