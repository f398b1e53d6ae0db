/**
 * The conversation tree of one session: records linked by `parentUuid` (a rewind or an edit makes
 * siblings), the newest leaf (the current branch ends there), and an outline that puts every record in
 * reading order once: the current branch from its start, other branches nested where they fork, and
 * compactions bridged. Pure.
 *
 * Compactions: Claude Code starts a compacted conversation from a new root. Its own transcript marks
 * that with a `system`/`compact_boundary` record (`parentUuid: null`, `logicalParentUuid` naming the
 * last record before it); a mirror without such a record has a root user record carrying the summary
 * ("This session is being continued from a previous conversation…"). Reading follows the logical link
 * across both, so the whole conversation shows; restoring does not (see `branchTo`).
 */
import { type Block, blocksOf, isCompactBoundary, isCompactSummary, messageOf, parentOf, type Rec, timeOf, uuidOf } from "./records.ts";

/** The records of one conversation, indexed. */
export interface Tree {
  /** Records with a uuid, first occurrence of each uuid, in file order. */
  nodes: Rec[];
  byUuid: Map<string, Rec>;
  /** Children of each uuid, oldest first. */
  children: Map<string, Rec[]>;
  /** Records whose parent is null or not in the tree. */
  roots: Rec[];
  /** The newest record without children: where the current branch ends. */
  newestLeaf: Rec | null;
  /** Per uuid, the newest leaf of its subtree. */
  bestLeaf: Map<string, Rec>;
  /** File position of each uuid (breaks timestamp ties: later in the file is newer). */
  order: Map<string, number>;
}

/** One entry of a conversation in reading order. */
export type Item =
  | { kind: "record"; record: Rec }
  /** The conversation was compacted here: `record` is the boundary record, or the summary that starts the new root. */
  | { kind: "compaction"; record: Rec }
  /** Other branches forking after the record `at` (null: conversations not connected to the current one). */
  | { kind: "branches"; at: string | null; branches: Item[][] };

/** Builds the tree of `records` (any order; file order breaks time ties). */
export function buildTree(records: Rec[]): Tree {
  const nodes: Rec[] = [];
  const byUuid = new Map<string, Rec>();
  const order = new Map<string, number>();
  records.forEach((r, i) => {
    const id = uuidOf(r);
    if (id === null || byUuid.has(id)) return;
    byUuid.set(id, r);
    order.set(id, i);
    nodes.push(r);
  });
  const children = new Map<string, Rec[]>();
  const roots: Rec[] = [];
  for (const n of nodes) {
    const p = parentOf(n);
    if (p !== null && p !== uuidOf(n) && byUuid.has(p)) {
      const list = children.get(p) ?? [];
      list.push(n);
      children.set(p, list);
    } else {
      roots.push(n);
    }
  }
  const cmp = compareBy(order);
  for (const list of children.values()) list.sort(cmp);
  // Breadth-first from the roots gives an order in which every parent precedes its children; walking it
  // backwards settles each subtree's newest leaf before its parent's. Records in a parent loop are never
  // reached from a root and take no part (the outline still lists them, see `outline`).
  const reached: Rec[] = [...roots];
  for (let i = 0; i < reached.length; i++) reached.push(...(children.get(uuidOf(reached[i])!) ?? []));
  const bestLeaf = new Map<string, Rec>();
  for (let i = reached.length - 1; i >= 0; i--) {
    const n = reached[i];
    let best: Rec = n;
    const kids = children.get(uuidOf(n)!);
    if (kids !== undefined) {
      best = bestLeaf.get(uuidOf(kids[0])!)!;
      for (const k of kids.slice(1)) {
        const b = bestLeaf.get(uuidOf(k)!)!;
        if (cmp(b, best) > 0) best = b;
      }
    }
    bestLeaf.set(uuidOf(n)!, best);
  }
  let newestLeaf: Rec | null = null;
  for (const r of roots) {
    const b = bestLeaf.get(uuidOf(r)!)!;
    if (newestLeaf === null || cmp(b, newestLeaf) > 0) newestLeaf = b;
  }
  return { nodes, byUuid, children, roots, newestLeaf, bestLeaf, order };
}

/** Orders records by time, then by file position (a record later in the file is newer). */
function compareBy(order: Map<string, number>): (a: Rec, b: Rec) => number {
  return (a, b) => {
    const ta = timeOf(a);
    const tb = timeOf(b);
    if (Number.isFinite(ta) && Number.isFinite(tb) && ta !== tb) return ta - tb;
    return (order.get(uuidOf(a)!) ?? 0) - (order.get(uuidOf(b)!) ?? 0);
  };
}

/** The records from the root down to `leaf` by `parentUuid` alone (what Claude Code itself would load). */
export function branchTo(tree: Tree, leaf: Rec | null): Rec[] {
  const out: Rec[] = [];
  const seen = new Set<string>();
  for (let r: Rec | undefined = leaf ?? undefined; r !== undefined;) {
    const id = uuidOf(r)!;
    if (seen.has(id)) break;
    seen.add(id);
    out.push(r);
    const p = parentOf(r);
    r = p === null ? undefined : tree.byUuid.get(p);
  }
  return out.reverse();
}

/** The current branch: root to newest leaf, by `parentUuid`. */
export function currentBranch(tree: Tree): Rec[] {
  return branchTo(tree, tree.newestLeaf);
}

/**
 * Where a record continues from when reading: its parent; for a compaction's new root, the record the
 * conversation had reached before it (the boundary's `logicalParentUuid`, or else the newest leaf before
 * the summary in another part of the tree); null for a true start.
 */
export function logicalParent(tree: Tree, r: Rec): Rec | null {
  const p = parentOf(r);
  if (p !== null && tree.byUuid.has(p)) return tree.byUuid.get(p)!;
  if (isCompactBoundary(r)) {
    const logical = typeof r.logicalParentUuid === "string" ? tree.byUuid.get(r.logicalParentUuid) : undefined;
    return logical ?? null;
  }
  if (p === null && isCompactSummary(r)) {
    const cmp = compareBy(tree.order);
    const own = rootOf(tree, r);
    let best: Rec | null = null;
    for (const root of tree.roots) {
      if (root === own) continue;
      const leaf = tree.bestLeaf.get(uuidOf(root)!);
      if (leaf === undefined || cmp(leaf, r) >= 0) continue;
      if (best === null || cmp(leaf, best) > 0) best = leaf;
    }
    return best;
  }
  return null;
}

/** The root of the tree part holding `r`. */
function rootOf(tree: Tree, r: Rec): Rec {
  const seen = new Set<string>();
  let cur = r;
  for (;;) {
    const id = uuidOf(cur)!;
    const p = parentOf(cur);
    const parent = p === null ? undefined : tree.byUuid.get(p);
    if (parent === undefined || seen.has(id)) return cur;
    seen.add(id);
    cur = parent;
  }
}

/** The current branch extended across compactions: the whole conversation as a person reads it. */
export function readingPath(tree: Tree): Rec[] {
  const out: Rec[] = [];
  const seen = new Set<string>();
  for (let r: Rec | null = tree.newestLeaf; r !== null; r = logicalParent(tree, r)) {
    const id = uuidOf(r)!;
    if (seen.has(id)) break;
    seen.add(id);
    out.push(r);
  }
  return out.reverse();
}

/** Every record in reading order, each once: the reading path, with other branches nested where they fork. */
export function outline(tree: Tree): Item[] {
  const placed = new Set<string>();
  const path = readingPath(tree);
  const items: Item[] = [];
  for (let i = 0; i < path.length; i++) {
    const r = path[i];
    const id = uuidOf(r)!;
    placed.add(id);
    items.push(...itemsOf(tree, r));
    const next = path[i + 1];
    const others = (tree.children.get(id) ?? []).filter((c) => c !== next);
    if (others.length > 0) items.push({ kind: "branches", at: id, branches: others.map((c) => line(tree, c, placed)) });
  }
  const loose = tree.roots.filter((r) => !placed.has(uuidOf(r)!));
  if (loose.length > 0) items.push({ kind: "branches", at: null, branches: loose.map((r) => line(tree, r, placed)) });
  const unreached = tree.nodes.filter((r) => !placed.has(uuidOf(r)!)); // records in a parentUuid loop
  if (unreached.length > 0) items.push({ kind: "branches", at: null, branches: [unreached.map((record) => ({ kind: "record" as const, record }))] });
  return items;
}

/**
 * Forks nested deeper than this are listed one after another at that depth instead: nobody reads a fork of
 * a fork sixteen levels down, and the outline, its renderers and `flatten` must not recurse as deep as a
 * hostile tree goes.
 */
export const MAX_NESTING = 16;

/** One branch from `start` down to its newest leaf, with its own forks nested (at most MAX_NESTING deep). */
function line(tree: Tree, start: Rec, placed: Set<string>, depth = 1): Item[] {
  const items: Item[] = [];
  const deferred: { at: string; start: Rec }[] = [];
  const walk = (from: Rec, into: Item[]) => {
    for (let r: Rec | undefined = from; r !== undefined;) {
      const id: string = uuidOf(r)!;
      if (placed.has(id)) break;
      placed.add(id);
      into.push(...itemsOf(tree, r));
      const kids: Rec[] = tree.children.get(id) ?? [];
      if (kids.length === 0) break;
      const best = tree.bestLeaf.get(id);
      const next: Rec = kids.find((k) => tree.bestLeaf.get(uuidOf(k)!) === best) ?? kids[kids.length - 1];
      const others = kids.filter((k) => k !== next);
      if (others.length > 0 && depth + 1 < MAX_NESTING) into.push({ kind: "branches", at: id, branches: others.map((k) => line(tree, k, placed, depth + 1)) });
      else for (const k of others) deferred.push({ at: id, start: k });
      r = next;
    }
  };
  walk(start, items);
  for (let i = 0; i < deferred.length; i++) {
    const branch: Item[] = [];
    walk(deferred[i].start, branch);
    if (branch.length > 0) items.push({ kind: "branches", at: deferred[i].at, branches: [branch] });
  }
  return items;
}

/** A record's entries: a boundary is a compaction mark; a summary not under a boundary gets one before it. */
function itemsOf(tree: Tree, r: Rec): Item[] {
  if (isCompactBoundary(r)) return [{ kind: "compaction", record: r }];
  if (startsCompaction(tree, r)) return [{ kind: "compaction", record: r }, { kind: "record", record: r }];
  return [{ kind: "record", record: r }];
}

/** True for a compaction summary that no boundary record announces (the mirror's shape of a compaction). */
function startsCompaction(tree: Tree, r: Rec): boolean {
  if (!isCompactSummary(r)) return false;
  const p = parentOf(r);
  const parent = p === null ? undefined : tree.byUuid.get(p);
  return parent === undefined || !isCompactBoundary(parent);
}

/** Every record an outline holds, in the order it shows them. */
export function flatten(items: Item[]): Rec[] {
  const out: Rec[] = [];
  for (const item of items) {
    if (item.kind === "record") out.push(item.record);
    else if (item.kind === "compaction") {
      if (isCompactBoundary(item.record)) out.push(item.record);
    } else for (const b of item.branches) out.push(...flatten(b));
  }
  return out;
}

/** Counts for a summary: leaves, forks (records with more than one child) and compactions. */
export function shape(tree: Tree): { leaves: number; forks: number; compactions: number } {
  let leaves = 0;
  let forks = 0;
  let compactions = 0;
  for (const n of tree.nodes) {
    const kids = tree.children.get(uuidOf(n)!)?.length ?? 0;
    if (kids === 0) leaves++;
    if (kids > 1) forks++;
    if (isCompactBoundary(n) || startsCompaction(tree, n)) compactions++;
  }
  return { leaves, forks, compactions };
}

/** The tool results of an outline by their tool_use_id, so a reader can show each beneath its call. */
export function toolResults(items: Item[], out = new Map<string, Block>()): Map<string, Block> {
  for (const item of items) {
    if (item.kind === "record") {
      for (const b of blocksOf(messageOf(item.record)?.content)) if (b.type === "tool_result" && typeof b.tool_use_id === "string") out.set(b.tool_use_id, b);
    } else if (item.kind === "branches") { for (const branch of item.branches) toolResults(branch, out); }
  }
  return out;
}
