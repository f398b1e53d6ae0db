/**
 * Reading a Messages API request body in proportion to what is new (docs/DESIGN.md "Request side").
 * Claude Code re-sends the whole conversation every turn, so a body shares all but its last few messages
 * with the one before it. The reader keeps the previous bodies of each conversation; it finds the longest
 * byte prefix a new body shares with one of them (a native compare), keeps the hashes of the messages
 * inside that prefix, and parses only the messages after it, and the rest of the body (system prompt,
 * tools, metadata) only when its bytes changed. A message whose content is not needed is never parsed:
 * its content is read from the body's bytes on first use. Pure: bytes in, a read request out.
 */
import { Buffer } from "node:buffer";
import { chainHash, messageHash } from "./message-hash.ts";
import { memberValue, scanArrayElements, skipSpace, type Span } from "./json-scan.ts";
import { type HashedMessage, systemKey } from "./lineage.ts";
import { isObject, type Json } from "./json.ts";

/** A request body that could not be read as a Messages API request. */
export class UnreadableRequest extends Error {
  override name = "UnreadableRequest";
}

/** One entry of `messages`: a message with its identity, or null for an entry that is not a message. */
export type ReadMessage = HashedMessage | null;

/** What the reader gives back for one body. */
export interface ReadRequest {
  /**
   * Everything but `messages` and `tools`, parsed (`messages` is an empty array in it). The tools are
   * counted, not kept: Claude Code's are some 30 KiB of JSON, several times that parsed, and every
   * conversation's reader would hold them (docs/BENCHMARKS.md, memory per stream).
   */
  rest: Json;
  /** How many tools the body declares. */
  toolCount: number;
  /** The messages in order (entries that are not messages are left out), content read on first use. */
  messages: HashedMessage[];
  /** How many entries of `messages` were parsed for this body (the others came from an earlier body). */
  parsed: number;
}

/** What the reader remembers of one body. */
interface Remembered {
  bytes: Uint8Array;
  /** Where the `messages` value starts and ends. */
  array: Span;
  spans: Span[];
  entries: ReadMessage[];
  rest: Json;
  toolCount: number;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** The text of `bytes[span]`, refusing anything that is not UTF-8. */
function text(bytes: Uint8Array, [start, end]: Span): string {
  try {
    return decoder.decode(bytes.subarray(start, end));
  } catch {
    throw new UnreadableRequest("request body is not UTF-8");
  }
}

/** JSON.parse of `bytes[span]`. */
function parse(bytes: Uint8Array, span: Span): unknown {
  try {
    return JSON.parse(text(bytes, span));
  } catch (error) {
    if (error instanceof UnreadableRequest) throw error;
    throw new UnreadableRequest("request body is not JSON");
  }
}

/** Length of the common prefix of two byte arrays, compared natively in blocks. */
export function commonPrefix(a: Uint8Array, b: Uint8Array): number {
  const x = Buffer.from(a.buffer, a.byteOffset, a.byteLength);
  const y = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
  const limit = Math.min(x.length, y.length);
  const BLOCK = 64 * 1024;
  let at = 0;
  while (at < limit) {
    const end = Math.min(at + BLOCK, limit);
    if (x.compare(y, at, end, at, end) === 0) {
      at = end;
      continue;
    }
    while (at < end && x[at] === y[at]) at++;
    return at;
  }
  return limit;
}

/** True when `a[aFrom..]` and `b[bFrom..]` hold the same bytes. */
function sameTail(a: Uint8Array, aFrom: number, b: Uint8Array, bFrom: number): boolean {
  if (a.length - aFrom !== b.length - bFrom) return false;
  return Buffer.from(a.buffer, a.byteOffset + aFrom, a.length - aFrom).equals(Buffer.from(b.buffer, b.byteOffset + bFrom, b.length - bFrom));
}

/** The entry for one parsed element, chained after `parent`. */
function entryOf(bytes: Uint8Array, span: Span, parent: string | null): ReadMessage {
  const m = parse(bytes, span);
  if (!isObject(m) || typeof m.role !== "string") return null;
  const hash = messageHash(m.role, m.content);
  if (m.role === "system") return { role: m.role, content: m.content, hash, chain: parent, key: systemKey(parent, hash) };
  const chain = chainHash(parent, hash);
  return { role: m.role, content: m.content, hash, chain, key: chain };
}

/** A message of an earlier body inside the shared prefix: its identity kept, its content read from the new body's bytes on first use. */
class ReusedMessage implements HashedMessage {
  readonly role: string;
  readonly hash: string;
  readonly chain: string | null;
  readonly key: string;
  private read = false;
  private value: unknown;

  constructor(entry: HashedMessage, private readonly bytes: Uint8Array, private readonly span: Span) {
    this.role = entry.role;
    this.hash = entry.hash;
    this.chain = entry.chain;
    this.key = entry.key;
  }

  /** The message's content, parsed on first use. */
  get content(): unknown {
    if (!this.read) {
      this.value = (parse(this.bytes, this.span) as Json).content;
      this.read = true;
    }
    return this.value;
  }

  /** Spools and sinks serialise a message with its content. */
  toJSON(): HashedMessage {
    return { role: this.role, content: this.content, hash: this.hash, chain: this.chain, key: this.key };
  }
}

/** An earlier body's entry, re-pointed at the new body's bytes (same span: the prefix is the same). */
function reused(entry: ReadMessage, bytes: Uint8Array, span: Span): ReadMessage {
  return entry === null ? null : new ReusedMessage(entry, bytes, span);
}

/** Reads request bodies, remembering the latest few of each conversation (bounded in bytes). */
export class RequestReader {
  private readonly bodies = new Map<string, Remembered[]>();
  private held = 0;

  /** `maxBytes`: bodies kept in all; `perKey`: bodies kept per conversation (a main one and its side requests). */
  constructor(
    private readonly maxBytes = 128 * 1024 * 1024,
    private readonly perKey = 3,
  ) {}

  /** Bytes of bodies remembered. */
  get bytesHeld(): number {
    return this.held;
  }

  /** Reads `bytes`, reusing what an earlier body of conversation `key` shares with it; throws UnreadableRequest. */
  read(key: string | null, bytes: Uint8Array): ReadRequest {
    const earlier = key === null ? [] : (this.bodies.get(key) ?? []);
    let best: Remembered | null = null;
    let bestPrefix = -1;
    for (const r of earlier) {
      const prefix = commonPrefix(r.bytes, bytes);
      if (prefix > bestPrefix && prefix > r.array[0]) [best, bestPrefix] = [r, prefix];
    }
    const now = best === null ? this.readWhole(bytes) : this.readAfter(best, bestPrefix, bytes);
    if (key !== null) this.remember(key, now.remembered, best);
    return now.request;
  }

  /** A body with nothing to reuse. */
  private readWhole(bytes: Uint8Array): { request: ReadRequest; remembered: Remembered } {
    const array = memberValue(bytes, "messages");
    if (array === null) throw new UnreadableRequest(isObject(parse(bytes, [0, bytes.length])) ? "request has no messages array" : "request body is not JSON");
    const scanned = scanArrayElements(bytes, array[0]);
    if (scanned === null) throw new UnreadableRequest("request has no messages array");
    return this.finish(bytes, array, scanned.spans, [], null);
  }

  /** A body that shares `prefix` bytes with `earlier`. */
  private readAfter(earlier: Remembered, prefix: number, bytes: Uint8Array): { request: ReadRequest; remembered: Remembered } {
    let kept = 0;
    while (kept < earlier.spans.length && earlier.spans[kept][1] <= prefix) kept++;
    let spans: Span[];
    if (kept === 0) {
      const scanned = scanArrayElements(bytes, earlier.array[0]);
      if (scanned === null) return this.readWhole(bytes);
      spans = scanned.spans;
    } else {
      const after = skipSpace(bytes, earlier.spans[kept - 1][1]);
      if (bytes[after] === 0x5d) spans = earlier.spans.slice(0, kept);
      else if (bytes[after] === 0x2c) {
        const scanned = scanArrayElements(bytes, after + 1, true);
        if (scanned === null) return this.readWhole(bytes);
        spans = [...earlier.spans.slice(0, kept), ...scanned.spans];
      } else return this.readWhole(bytes);
    }
    const entries = earlier.entries.slice(0, kept).map((e, i) => reused(e, bytes, spans[i]));
    return this.finish(bytes, [earlier.array[0], this.arrayEnd(bytes, spans, earlier.array[0])], spans, entries, earlier);
  }

  /** Where the messages array ends, given its element spans. */
  private arrayEnd(bytes: Uint8Array, spans: Span[], start: number): number {
    const from = spans.length === 0 ? skipSpace(bytes, start + 1) : skipSpace(bytes, spans[spans.length - 1][1]);
    if (bytes[from] !== 0x5d) throw new UnreadableRequest("request has no messages array");
    return from + 1;
  }

  /** Parses the entries after `entries` and, unless its bytes are unchanged, the rest of the body. */
  private finish(
    bytes: Uint8Array,
    array: Span,
    spans: Span[],
    entries: ReadMessage[],
    earlier: Remembered | null,
  ): { request: ReadRequest; remembered: Remembered } {
    const all = [...entries];
    let parent: string | null = null;
    for (const e of all) if (e !== null && e.role !== "system") parent = e.chain;
    for (let i = entries.length; i < spans.length; i++) {
      const entry = entryOf(bytes, spans[i], parent);
      all.push(entry);
      if (entry !== null && entry.role !== "system") parent = entry.chain;
    }
    // The bytes before the array are the earlier body's (readAfter is only called past them).
    const restUnchanged = earlier !== null && sameTail(earlier.bytes, earlier.array[1], bytes, array[1]);
    const { rest, toolCount } = restUnchanged ? earlier : this.parseRest(bytes, array);
    const remembered: Remembered = { bytes, array, spans, entries: all, rest, toolCount };
    const messages = all.filter((e): e is HashedMessage => e !== null);
    return { request: { rest, toolCount, messages, parsed: spans.length - entries.length }, remembered };
  }

  /** The body without its messages, parsed, and its tools counted. */
  private parseRest(bytes: Uint8Array, array: Span): { rest: Json; toolCount: number } {
    const rest = JSON.parse(`${text(bytes, [0, array[0]])}[]${text(bytes, [array[1], bytes.length])}`) as unknown;
    if (!isObject(rest)) throw new UnreadableRequest("request body is not JSON");
    const toolCount = Array.isArray(rest.tools) ? rest.tools.length : 0;
    delete rest.tools;
    return { rest, toolCount };
  }

  /** Keeps `now` as the newest body of `key` (replacing `replaced`), within the byte bound. */
  private remember(key: string, now: Remembered, replaced: Remembered | null): void {
    const list = (this.bodies.get(key) ?? []).filter((r) => r !== replaced);
    if (replaced !== null) this.held -= replaced.bytes.length;
    list.unshift(now);
    this.held += now.bytes.length;
    while (list.length > this.perKey) this.held -= list.pop()!.bytes.length;
    this.bodies.delete(key);
    this.bodies.set(key, list); // most recently used last
    for (const [k, bodies] of this.bodies) {
      if (this.held <= this.maxBytes || k === key) break;
      for (const r of bodies) this.held -= r.bytes.length;
      this.bodies.delete(k);
    }
  }
}
