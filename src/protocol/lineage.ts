// Exactly-once planning (docs/DESIGN.md "Exactly once"): a message's identity stable across re-sends, chain hashes, the index of
// a conversation's mirrored positions, and which messages are new. Pure but for the request prefixes it has read.
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

/** `parent`: the position the first of them follows (a known prefix's end). */
export function hashMessages(messages: unknown[], parent: string | null = null): HashedMessage[] {
  const out: HashedMessage[] = [];
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
/** After a known prefix a byte-order mark is no mark but a byte the body holds. */
const partDecoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** A Messages API body decoded, parsed and hashed (docs/DESIGN.md "Request side"); the tools are counted, not kept (some 30 KiB). */
export function readRequest(bytes: Uint8Array): { rest: Json; toolCount: number; messages: HashedMessage[] } {
  let known = bytes.byteLength < KNOWN_MIN_BYTES ? null : knownPrefix(bytes);
  // The bytes after a known prefix are scanned first: a second `messages` there is the one a whole reading keeps.
  const layout = known === null ? null : scanLayout(bytes, known.prefix.length + known.skip, known.prefix.open);
  if (layout === null) known = null;
  const body = parseBody(known === null ? [bytes] : [bytes.subarray(0, known.prefix.open), bytes.subarray(known.prefix.length + known.skip)]);
  // `[a,]`: no element follows the prefix's comma, which the whole body's reading refuses.
  if (known?.skip === 1 && Array.isArray(body.messages) && body.messages.length === 0) throw new UnreadableRequest("request body is not JSON");
  const { messages, tools, ...rest } = body;
  if (!Array.isArray(messages)) throw new UnreadableRequest("request has no messages array");
  const hashed = known === null ? hashMessages(messages) : [...known.prefix.messages, ...hashMessages(messages, known.prefix.messages.at(-1)?.chain ?? null)];
  if (bytes.byteLength >= KNOWN_MIN_BYTES) remember(bytes, known, layout ?? scanLayout(bytes, 0, -1), messages, hashed);
  return { rest, toolCount: Array.isArray(tools) ? tools.length : 0, messages: hashed };
}

function parseBody(parts: Uint8Array[]): Json {
  let body: unknown;
  try {
    body = JSON.parse(parts.map((part, i) => (i === 0 ? decoder : partDecoder).decode(part)).join(""));
  } catch (error) {
    throw new UnreadableRequest(error instanceof TypeError ? "request body is not UTF-8" : "request body is not JSON");
  }
  if (!isObject(body)) throw new UnreadableRequest("request body is not JSON");
  return body;
}

// Each request re-sends the conversation: a history prefix whose bytes (from the body's first byte) hash the same as one read before
// is the same messages, in the same place, neither parsed nor hashed again (BENCHMARKS.md "Issue 28: a history prefix read once").
const KNOWN_MIN_BYTES = 64 * 1024;
const KNOWN_MAX = 8;
const KNOWN_MAX_BYTES = 64 * 1024 * 1024;
const FINGERPRINT = 64;

interface KnownPrefix {
  /** Bytes from the body's start to the delimiter after its last element (a `,` or the `]`). */
  length: number;
  digest: string;
  /** Just after the `[` that opens `messages`. */
  open: number;
  elements: number;
  messages: HashedMessage[];
  /** The bytes just before `length`: most bodies that differ are told apart without hashing. */
  tail: Uint8Array;
}

/** Newest first. */
const knownPrefixes: KnownPrefix[] = [];

type Known = { prefix: KnownPrefix; skip: number; hash: ReturnType<typeof createHash> };

function knownPrefix(bytes: Uint8Array): Known | null {
  for (const prefix of knownPrefixes) {
    const next = bytes[prefix.length];
    if (bytes.byteLength <= prefix.length || (next !== COMMA && next !== CLOSE_ARRAY)) continue;
    if (!sameBytes(bytes.subarray(prefix.length - FINGERPRINT, prefix.length), prefix.tail)) continue;
    const hash = createHash("sha256").update(bytes.subarray(0, prefix.length));
    if (hash.copy().digest("hex") === prefix.digest) return { prefix, skip: next === COMMA ? 1 : 0, hash };
  }
  return null;
}

/** Keeps this body's prefix for the next request: `messages` are the elements parsed (after a known prefix), `hashed` all. */
function remember(bytes: Uint8Array, known: Known | null, layout: Layout | null, messages: unknown[], hashed: HashedMessage[]): void {
  const from = known?.prefix ?? null;
  if (layout === null || layout.ends.length !== messages.length) return;
  const { ends } = layout;
  const startOf = (j: number) => j > 0 ? ends[j - 1] + 1 : from === null ? layout.open : from.length + 1;
  // A cache marker moves to the newest message on the next request: the prefix stops before the first of the last few that carry one.
  let cut = ends.length;
  for (let j = Math.max(0, ends.length - 4); j < ends.length; j++) {
    if (Buffer.from(bytes.buffer, bytes.byteOffset + startOf(j), ends[j] - startOf(j)).includes(CACHE_MARKER)) {
      cut = j;
      break;
    }
  }
  const length = cut === 0 ? (from?.length ?? 0) : ends[cut - 1];
  if (from !== null) knownPrefixes.splice(knownPrefixes.indexOf(from), 1);
  if (length <= (from?.length ?? FINGERPRINT)) {
    if (from !== null) knownPrefixes.unshift(from);
    return;
  }
  const digest = (known?.hash ?? createHash("sha256")).update(bytes.subarray(from?.length ?? 0, length)).digest("hex");
  const newOnes = messages.slice(0, cut).filter((m) => isObject(m) && typeof m.role === "string").length;
  knownPrefixes.unshift({
    length,
    digest,
    open: layout.open,
    elements: (from?.elements ?? 0) + cut,
    messages: hashed.slice(0, (from?.messages.length ?? 0) + newOnes),
    tail: bytes.slice(length - FINGERPRINT, length),
  });
  let total = 0;
  const over = knownPrefixes.findIndex((p, i) => (total += p.length) > KNOWN_MAX_BYTES || i >= KNOWN_MAX);
  if (over >= 0) knownPrefixes.length = over;
}

const [QUOTE, BACKSLASH, COMMA, COLON, OPEN_ARRAY, CLOSE_ARRAY, OPEN_OBJECT, CLOSE_OBJECT] = [...'"\\,:[]{}'].map((c) => c.charCodeAt(0));
const CACHE_MARKER = Buffer.from('"cache_control"');
const MESSAGES_KEY = Buffer.from("messages");

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b);
}

/**
 * Where the top-level `messages` array opens and where each of its elements ends (its `,` or `]`), from `at`: the body's start
 * (`open` -1), or just after a known prefix's delimiter inside that array. Null for a body read another way (a key written with an
 * escape, `messages` twice), which is then never a known prefix.
 */
type Layout = { open: number; ends: number[] };

function scanLayout(b: Uint8Array, at: number, open: number): Layout | null {
  const ends: number[] = [];
  const resumed = open >= 0;
  let depth = resumed ? 2 : 0;
  let inMessages = resumed;
  let seen = resumed ? 1 : 0;
  let key = -1;
  let value = false;
  for (let i = at; i < b.length; i++) {
    const c = b[i];
    if (c === QUOTE) {
      let end = b.indexOf(QUOTE, i + 1);
      for (; end > 0; end = b.indexOf(QUOTE, end + 1)) {
        let slashes = 0;
        while (b[end - 1 - slashes] === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
      }
      if (end < 0) return null;
      if (depth === 1) key = i;
      i = end;
    } else if (c === COLON && depth === 1) {
      const name = b.subarray(key + 1, b.indexOf(QUOTE, key + 1));
      if (name.includes(BACKSLASH)) return null;
      value = sameBytes(name, MESSAGES_KEY);
      if (value && ++seen > 1) return null;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (depth === 1 && value && c === OPEN_ARRAY) [open, inMessages] = [i + 1, true];
      value = false;
      depth++;
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
      if (inMessages && depth === 1) {
        inMessages = false;
        // Resumed at the `]`, that `]` ends the prefix's own last element.
        if (resumed ? i > at : ends.length > 0 || b.subarray(open, i).some((x) => x > 0x20)) ends.push(i);
      }
    } else if (c === COMMA && depth === 1) value = false;
    else if (c === COMMA && inMessages && depth === 2) ends.push(i);
  }
  return open < 0 ? null : { open, ends };
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
