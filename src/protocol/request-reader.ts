/**
 * Reading a Messages API request body (docs/DESIGN.md "Request side"): decoded, parsed, and each message
 * given its identity (lineage.ts). Claude Code re-sends the whole conversation every turn, so this is work
 * in proportion to the history; it runs in the mirror engine's Worker, never on the relay's thread. Pure:
 * bytes in, a read request out.
 */
import { type HashedMessage, hashMessages } from "./lineage.ts";
import { isObject, type Json } from "./json.ts";

/** A request body that could not be read as a Messages API request. */
export class UnreadableRequest extends Error {
  override name = "UnreadableRequest";
}

/** What the reader gives back for one body. */
export interface ReadRequest {
  /** Everything but `messages` and `tools`, parsed: the tools are counted, not kept (Claude Code's are some 30 KiB). */
  rest: Json;
  /** How many tools the body declares. */
  toolCount: number;
  /** The messages in order (entries that are not messages are left out), each with its identity. */
  messages: HashedMessage[];
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** Reads `bytes`; throws UnreadableRequest naming why it cannot. */
export function readRequest(bytes: Uint8Array): ReadRequest {
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw new UnreadableRequest("request body is not UTF-8");
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new UnreadableRequest("request body is not JSON");
  }
  if (!isObject(body)) throw new UnreadableRequest("request body is not JSON");
  const { messages, tools, ...rest } = body;
  if (!Array.isArray(messages)) throw new UnreadableRequest("request has no messages array");
  return { rest, toolCount: Array.isArray(tools) ? tools.length : 0, messages: hashMessages(messages) };
}
