/**
 * What the mirror remembers of one conversation directory, and how it is rebuilt from the records on
 * disk after a start (so a restart never re-mirrors history). Pure.
 */
import { chainHash, messageHash } from "./message-hash.ts";
import { type LineageView, systemKey } from "./lineage.ts";

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
 * Applies records read back from disk, in file order, to a lineage: each record's position from its
 * parent's. Incremental, so records another writer appended can be applied as they are found.
 * `outside` resolves parents that live in another directory (a side exchange hangs from the main
 * conversation).
 */
export class LineageReader {
  private readonly byUuid = new Map<string, { parentUuid: unknown; hash: string | null; system: boolean; segment?: unknown }>();

  constructor(
    readonly lineage: Lineage,
    private readonly outside?: Lineage,
  ) {}

  /** The position after a parent record, here or outside. */
  private chainOfParent(parentUuid: unknown): string | null {
    if (typeof parentUuid !== "string") return null;
    const own = this.lineage.chainAfter(parentUuid);
    if (own !== undefined) return own;
    return this.outside?.chainAfter(parentUuid) ?? null;
  }

  /** Applies one record. */
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
    const hash = messageHash(message.role, message.content);
    const system = message.role === "system";
    this.byUuid.set(r.uuid, { parentUuid: r.parentUuid, hash, system });
    if (system) {
      this.lineage.add({ key: systemKey(parent, hash), uuid: r.uuid, chain: parent, hash: null });
      return;
    }
    const chain = chainHash(parent, hash);
    this.lineage.add({ key: chain, uuid: r.uuid, chain, hash });
    if (r.isCompactSummary === true) this.aliasKeptTail(r, chain);
  }

  /** Re-creates the aliases of a compaction's kept tail from its boundary's preservedSegment (head … tail). */
  private aliasKeptTail(summary: Rec, summaryChain: string): void {
    const boundary = this.byUuid.get(String(summary.parentUuid));
    const segment = boundary?.segment as { headUuid?: string; tailUuid?: string } | undefined;
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

/** Rebuilds a lineage from records in file order (see LineageReader). */
export function lineageFromRecords(records: Rec[], outside?: Lineage): Lineage {
  const reader = new LineageReader(new Lineage(), outside);
  for (const r of records) reader.apply(r);
  return reader.lineage;
}
