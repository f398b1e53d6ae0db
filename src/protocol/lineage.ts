// Exactly-once planning (docs/DESIGN.md "Exactly once"): a message's identity stable across re-sends, chain hashes, the index of
// a conversation's mirrored positions, and which messages are new. Pure.
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { isObject, type Json } from "./json.ts";

const THINKING_TYPES = new Set(["thinking", "redacted_thinking"]);
// Cache markers move between re-sends; a signature is re-made when thinking is cleared.
const IGNORED_KEYS = new Set(["cache_control", "signature"]);

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

function scrubBlock(block: Json, includeThinking: boolean): Json[] {
  if (!includeThinking && THINKING_TYPES.has(String(block.type))) return [];
  // Claude Code's transcript never stores `cache_control`, and restoring it would send more breakpoints than the API accepts.
  const { cache_control: _marker, ...out } = block as Json & { cache_control?: unknown };
  const source = block.source;
  if (isObject(source) && source.type === "base64") {
    out.source = { type: "reference", sha256: sha256(Buffer.from(String(source.data ?? ""), "base64")), media_type: source.media_type ?? null };
  }
  if (Array.isArray(block.content)) out.content = scrubContent(block.content, includeThinking); // tool results hold images too
  return [out];
}

export function scrubContent<T>(content: T, includeThinking: boolean): T {
  if (!Array.isArray(content)) return content;
  return content.flatMap((block) => (isObject(block) ? scrubBlock(block, includeThinking) : [block])) as T;
}

function canonicalBlock(block: Json): Json {
  const out: Json = {};
  for (const [key, value] of Object.entries(block)) {
    if (IGNORED_KEYS.has(key) || key.startsWith("sessiontap_") || (key === "is_error" && value === false)) continue;
    out[key] = key === "content" ? canonicalContent(value) : value;
  }
  return out;
}

// A string and a single text block mean the same; thinking is not part of identity (it is cleared and re-signed).
function canonicalContent(content: unknown): unknown {
  if (typeof content === "string") return [{ type: "text", text: content }];
  if (!Array.isArray(content)) return content;
  return content.filter((b) => !(isObject(b) && THINKING_TYPES.has(String(b.type)))).map((b) => (isObject(b) ? canonicalBlock(b) : b));
}

function sortKeys(_key: string, value: unknown): unknown {
  if (!isObject(value)) return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, value[key]]));
}

/** JSON with object keys sorted; past the depth a replacer allows (~1,500 on Deno), as sent, which is how Claude Code re-sends it. */
export function stableStringify(value: unknown): string {
  try {
    return JSON.stringify(value, sortKeys) ?? "null";
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    return JSON.stringify(value) ?? "null";
  }
}

export function messageHash(role: unknown, content: unknown): string {
  return sha256(stableStringify([role, canonicalContent(scrubContent(content, true))]));
}

export function chainHash(parent: string | null, message: string): string {
  return sha256((parent ?? "root") + ":" + message);
}

/** A deterministic UUID-shaped id from any seed; not RFC-versioned. */
export function uuidFrom(seed: string): string {
  const h = sha256(seed);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

export interface LineageView {
  get(key: string): string | undefined;
}

export interface HashedMessage {
  role: string;
  content: unknown;
  hash: string;
  /** The position after this message (a system message does not move it). */
  chain: string | null;
  key: string;
}

// A system message carries context Claude Code rebuilds (or empties) on its own: a slot beside its position, so a changed one
// never forks the history behind it.
function systemKey(parentChain: string | null, hash: string): string {
  return chainHash(parentChain, `system:${hash}`);
}

export function hashMessages(messages: unknown[]): HashedMessage[] {
  const out: HashedMessage[] = [];
  let parent: string | null = null;
  for (const m of messages) {
    if (!isObject(m) || typeof m.role !== "string") continue;
    const hash = messageHash(m.role, m.content);
    const chain: string | null = m.role === "system" ? parent : chainHash(parent, hash);
    out.push({ role: m.role, content: m.content, hash, chain, key: m.role === "system" ? systemKey(parent, hash) : chain! });
    parent = chain;
  }
  return out;
}

export class UnreadableRequest extends Error {
  override name = "UnreadableRequest";
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** A Messages API body decoded, parsed and hashed (docs/DESIGN.md "Request side"); the tools are counted, not kept (some 30 KiB). */
export function readRequest(bytes: Uint8Array): { rest: Json; toolCount: number; messages: HashedMessage[] } {
  let body: unknown;
  try {
    body = JSON.parse(decoder.decode(bytes));
  } catch (error) {
    throw new UnreadableRequest(error instanceof TypeError ? "request body is not UTF-8" : "request body is not JSON");
  }
  if (!isObject(body)) throw new UnreadableRequest("request body is not JSON");
  const { messages, tools, ...rest } = body;
  if (!Array.isArray(messages)) throw new UnreadableRequest("request has no messages array");
  return { rest, toolCount: Array.isArray(tools) ? tools.length : 0, messages: hashMessages(messages) };
}

/** Before `reconstructedBefore`: history the tap never saw answered. */
export interface Plan {
  start: number;
  parentUuid: string | null;
  reconstructedBefore: number;
}

/** The longest mirrored prefix, then the new suffix: `[u1, a1, u2]` with u1 and a1 mirrored starts at 2, under a1. */
export function planRequest(index: LineageView, messages: HashedMessage[]): Plan {
  const start = messages.findLastIndex((m) => index.get(m.key) !== undefined) + 1;
  const parentUuid = start > 0 ? (index.get(messages[start - 1].key) ?? null) : null;
  // Up to the suffix's last assistant message it is history (the tap started mid-session, or a write was lost); the last user turn is new.
  const lastAnswer = messages.findLastIndex((m, i) => i >= start && m.role === "assistant");
  return { start, parentUuid, reconstructedBefore: Math.max(start, lastAnswer + 1) };
}

export interface LineageEntry {
  key: string;
  uuid: string;
  chain: string | null;
  hash: string | null; // null for a compact boundary
}

export class Lineage implements LineageView {
  private readonly byKey = new Map<string, string>();
  /** A record's uuid → the position after it. */
  readonly chainOf = new Map<string, string | null>();
  /** A message's hash → the newest record holding it (a compaction's kept tail). */
  readonly byHash = new Map<string, string>();
  /** The last record written: what a compaction boundary logically follows. */
  leaf: string | null = null;

  get(key: string): string | undefined {
    return this.byKey.get(key);
  }

  add(entry: LineageEntry): void {
    this.byKey.set(entry.key, entry.uuid);
    if (!this.chainOf.has(entry.uuid)) this.chainOf.set(entry.uuid, entry.chain);
    if (entry.hash !== null) this.byHash.set(entry.hash, entry.uuid);
    this.leaf = entry.uuid;
  }

  // A compaction's kept tail is not written again: each kept position points at the summary, whose position becomes the tail's end.
  alias(key: string, uuid: string): void {
    this.byKey.set(key, uuid);
    this.chainOf.set(uuid, key);
  }
}

/** A side directory's view over the main conversation's. */
export function overlay(first: LineageView, second: LineageView): LineageView {
  return { get: (key) => first.get(key) ?? second.get(key) };
}

type Rec = Record<string, unknown>;

/** Records read back in file order, each placed from its parent's position; `outside` holds parents of another directory (a side's). */
export class LineageReader {
  private readonly byUuid = new Map<string, { parentUuid: unknown; hash: string | null; system: boolean; segment?: unknown }>();

  constructor(
    readonly lineage: Lineage,
    private readonly outside?: Lineage,
    /** A redacted record's original hash, sealed in it by secrets.ts. */
    private readonly unseal?: ((record: Rec) => string | null) | null,
  ) {}

  apply(r: Rec): void {
    if (typeof r.uuid !== "string") return;
    const message = r.message as { role?: unknown; content?: unknown } | undefined;
    if (r.type === "system" && r.subtype === "compact_boundary") {
      const segment = (r.compactMetadata as { preservedSegment?: unknown } | undefined)?.preservedSegment;
      this.byUuid.set(r.uuid, { parentUuid: r.parentUuid, hash: null, system: true, segment });
      this.lineage.add({ key: `boundary:${r.uuid}`, uuid: r.uuid, chain: null, hash: null });
      return;
    }
    if (typeof message !== "object" || message === null) return;
    const parent = typeof r.parentUuid !== "string" ? null : this.lineage.chainOf.get(r.parentUuid) ?? this.outside?.chainOf.get(r.parentUuid) ?? null;
    const hash = this.unseal?.(r) ?? messageHash(message.role, message.content); // a redacted record's is sealed in it
    const system = message.role === "system";
    this.byUuid.set(r.uuid, { parentUuid: r.parentUuid, hash, system });
    if (system) return this.lineage.add({ key: systemKey(parent, hash), uuid: r.uuid, chain: parent, hash: null });
    const chain = chainHash(parent, hash);
    this.lineage.add({ key: chain, uuid: r.uuid, chain, hash });
    if (r.isCompactSummary === true) this.aliasKeptTail(r, chain);
  }

  // A compaction's kept tail, from its boundary's preservedSegment (head … tail).
  private aliasKeptTail(summary: Rec, summaryChain: string): void {
    const segment = this.byUuid.get(String(summary.parentUuid))?.segment as { headUuid?: string; tailUuid?: string } | undefined;
    if (!segment?.headUuid || !segment.tailUuid) return;
    const kept: string[] = [];
    for (let uuid: string | undefined = segment.tailUuid; uuid !== undefined && kept.length < 10_000;) {
      kept.unshift(uuid);
      if (uuid === segment.headUuid) break;
      const parent: unknown = this.byUuid.get(uuid)?.parentUuid;
      uuid = typeof parent === "string" ? parent : undefined;
    }
    let chain = summaryChain;
    for (const uuid of kept) {
      const known = this.byUuid.get(uuid);
      if (known === undefined || known.system || known.hash === null) continue;
      chain = chainHash(chain, known.hash);
      this.lineage.alias(chain, String(summary.uuid));
    }
  }
}
