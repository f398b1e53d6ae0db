// Exactly-once planning (docs/DESIGN.md "Exactly once"): a request's messages by their chain hashes, the index of a
// conversation's mirrored positions (rebuilt from its records after a start), and which messages are new. Pure.
import { chainHash, messageHash } from "./message-hash.ts";
import type { Redactor } from "./secrets.ts";
import { isObject, type Json } from "./json.ts";

/** Index key → the uuid of the record holding that position. */
export interface LineageView {
  get(key: string): string | undefined;
}

export interface HashedMessage {
  role: string;
  content: unknown;
  hash: string;
  /** The position after this message (a system message does not move it), and its record's index key. */
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

/** What a request adds: the messages from `start` on, hanging from `parentUuid`; before `reconstructedBefore`, history the tap never saw answered. */
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

/** `hash` is null for a record without a message (a compact boundary). */
export interface LineageEntry {
  key: string;
  uuid: string;
  chain: string | null;
  hash: string | null;
}

export class Lineage implements LineageView {
  private readonly byKey = new Map<string, string>();
  private readonly chainOf = new Map<string, string | null>();
  private readonly byHash = new Map<string, string>();
  /** The last record written: what a compaction boundary logically follows. */
  leaf: string | null = null;

  get(key: string): string | undefined {
    return this.byKey.get(key);
  }

  chainAfter(uuid: string): string | null | undefined {
    return this.chainOf.get(uuid);
  }

  /** The newest record holding a message with this hash (a compaction's kept tail). */
  recordWithHash(hash: string): string | undefined {
    return this.byHash.get(hash);
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

/** A view that looks in `first`, then in `second` (a side directory over the main conversation). */
export function overlay(first: LineageView, second: LineageView): LineageView {
  return { get: (key) => first.get(key) ?? second.get(key) };
}

type Rec = Record<string, unknown>;

/**
 * Applies records read back in file order, each placed from its parent's position, as they are found (another writer's
 * appends too); `outside` holds parents of another directory (a side exchange hangs from the main conversation).
 */
export class LineageReader {
  private readonly byUuid = new Map<string, { parentUuid: unknown; hash: string | null; system: boolean; segment?: unknown }>();

  constructor(
    readonly lineage: Lineage,
    private readonly outside?: Lineage,
    private readonly redactor?: Redactor | null,
  ) {}

  private chainOfParent(parentUuid: unknown): string | null {
    if (typeof parentUuid !== "string") return null;
    return this.lineage.chainAfter(parentUuid) ?? this.outside?.chainAfter(parentUuid) ?? null;
  }

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
    const parent = this.chainOfParent(r.parentUuid);
    const hash = this.redactor?.unseal(r) ?? messageHash(message.role, message.content); // a redacted record's is sealed in it
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
