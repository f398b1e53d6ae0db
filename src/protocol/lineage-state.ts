/**
 * What the mirror remembers of one conversation directory, and how it is rebuilt from the records on
 * disk after a start (so a restart never re-mirrors history). Pure.
 */
import { chainHash, messageHash } from "./message-hash.ts";
import { systemKey } from "./lineage.ts";

/** Read access planning needs: index key → the uuid of the record that holds that position. */
export interface LineageView {
  get(key: string): string | undefined;
}

/** One record's place in a lineage, applied once its write succeeded. */
export interface LineageEntry {
  key: string;
  uuid: string;
  /** The conversation position after this record (a system record does not move it). */
  chain: string | null;
  /** The record's message hash (null for records without a message, such as a compact boundary). */
  hash: string | null;
}

/** The mirrored lineage of one conversation directory. */
export class Lineage implements LineageView {
  private readonly byKey = new Map<string, string>();
  private readonly chainOf = new Map<string, string | null>();
  private readonly byHash = new Map<string, string>();
  /** The last record written: what a compaction boundary logically follows. */
  leaf: string | null = null;

  /** The uuid holding an index key. */
  get(key: string): string | undefined {
    return this.byKey.get(key);
  }

  /** The conversation position after a record (for a record of another directory, such as a side exchange's parent). */
  chainAfter(uuid: string): string | null | undefined {
    return this.chainOf.get(uuid);
  }

  /** The newest record holding a message with this hash (to find a compaction's kept tail). */
  recordWithHash(hash: string): string | undefined {
    return this.byHash.get(hash);
  }

  /** Number of index keys (a measure of the state's size). */
  get size(): number {
    return this.byKey.size;
  }

  /** Applies one written record. */
  add(entry: LineageEntry): void {
    this.byKey.set(entry.key, entry.uuid);
    if (!this.chainOf.has(entry.uuid)) this.chainOf.set(entry.uuid, entry.chain);
    if (entry.hash !== null) this.byHash.set(entry.hash, entry.uuid);
    this.leaf = entry.uuid;
  }

  /**
   * Maps a position to an existing record: a compaction's kept tail is not written again, so each kept
   * position points at the summary, and the summary's position becomes the tail's end.
   */
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
 * Rebuilds a lineage from records in file order. `outside` resolves parents that live in another
 * directory (a side exchange hangs from the main conversation).
 */
export function lineageFromRecords(records: Rec[], outside?: Lineage): Lineage {
  const lineage = new Lineage();
  const byUuid = new Map<string, Rec>();
  const hashOf = new Map<string, string>();
  const chainOfParent = (parentUuid: unknown): string | null => {
    if (typeof parentUuid !== "string") return null;
    const own = lineage.chainAfter(parentUuid);
    if (own !== undefined) return own;
    return outside?.chainAfter(parentUuid) ?? null;
  };
  for (const r of records) {
    if (typeof r.uuid !== "string") continue;
    byUuid.set(r.uuid, r);
    const message = r.message as { role?: unknown; content?: unknown } | undefined;
    if (r.type === "system" && r.subtype === "compact_boundary") {
      lineage.add({ key: `boundary:${r.uuid}`, uuid: r.uuid, chain: null, hash: null });
      continue;
    }
    if (typeof message !== "object" || message === null) continue;
    const parent = chainOfParent(r.parentUuid);
    const hash = messageHash(message.role, message.content);
    hashOf.set(r.uuid, hash);
    if (message.role === "system") {
      lineage.add({ key: systemKey(parent, hash), uuid: r.uuid, chain: parent, hash: null });
      continue;
    }
    const chain = chainHash(parent, hash);
    lineage.add({ key: chain, uuid: r.uuid, chain, hash });
    if (r.isCompactSummary === true) aliasKeptTail(lineage, byUuid, hashOf, r, chain);
  }
  return lineage;
}

/** Re-creates the aliases of a compaction's kept tail from its boundary's preservedSegment (head … tail). */
function aliasKeptTail(lineage: Lineage, byUuid: Map<string, Rec>, hashOf: Map<string, string>, summary: Rec, summaryChain: string): void {
  const boundary = byUuid.get(String(summary.parentUuid));
  const segment = (boundary?.compactMetadata as { preservedSegment?: { headUuid?: string; tailUuid?: string } } | undefined)?.preservedSegment;
  if (!segment?.headUuid || !segment.tailUuid) return;
  const kept: string[] = [];
  for (let uuid: string | undefined = segment.tailUuid; uuid !== undefined && kept.length < 10_000; ) {
    kept.unshift(uuid);
    if (uuid === segment.headUuid) break;
    const parent: unknown = byUuid.get(uuid)?.parentUuid;
    uuid = typeof parent === "string" ? parent : undefined;
  }
  let chain = summaryChain;
  for (const uuid of kept) {
    const hash = hashOf.get(uuid);
    const record = byUuid.get(uuid);
    if (hash === undefined || (record?.message as { role?: unknown } | undefined)?.role === "system") continue;
    chain = chainHash(chain, hash);
    lineage.alias(chain, String(summary.uuid));
  }
}
