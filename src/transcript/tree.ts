// A session's records as a tree by `parentUuid` (a rewind or an edit makes siblings), its branches, and an outline with every record
// once in reading order, compactions bridged (docs/DESIGN.md "Shapes of a conversation"). Pure.
import { isObject } from "../protocol/json.ts";
import { isCompactBoundary, isCompactSummary, parentOf, type Rec, timeOf, uuidOf } from "./records.ts";

/** `nodes`: the first record of each uuid, in file order; `children` oldest first; `bestLeaf`: each subtree's newest leaf; `order`: file positions. */
export type Tree = ReturnType<typeof buildTree>;

/** A compaction is its boundary, or the summary starting a new root; branches fork after `at` (null: not connected). */
export type Item = { kind: "record"; record: Rec } | { kind: "compaction"; record: Rec } | { kind: "branches"; at: string | null; branches: Item[][] };

export function buildTree(records: Rec[]) {
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
    if (p !== null && p !== uuidOf(n) && byUuid.has(p)) children.set(p, [...(children.get(p) ?? []), n]);
    else roots.push(n);
  }
  const cmp = compareBy(order);
  for (const list of children.values()) list.sort(cmp);
  // Breadth-first from the roots puts every parent before its children: walked backwards, each subtree's newest leaf is
  // settled before its parent's. Records in a parent loop are never reached (the outline still lists them).
  const reached: Rec[] = [...roots];
  for (let i = 0; i < reached.length; i++) reached.push(...(children.get(uuidOf(reached[i])!) ?? []));
  const bestLeaf = new Map<string, Rec>();
  for (let i = reached.length - 1; i >= 0; i--) {
    const kids = children.get(uuidOf(reached[i])!) ?? [];
    const leaves = kids.map((k) => bestLeaf.get(uuidOf(k)!)!);
    bestLeaf.set(uuidOf(reached[i])!, leaves.reduce((a, b) => (cmp(b, a) > 0 ? b : a), leaves[0] ?? reached[i]));
  }
  const leaves = roots.map((r) => bestLeaf.get(uuidOf(r)!)!);
  const newestLeaf = leaves.reduce<Rec | null>((a, b) => (a === null || cmp(b, a) > 0 ? b : a), null);
  return { nodes, byUuid, children, roots, newestLeaf, bestLeaf, order };
}

function compareBy(order: Map<string, number>): (a: Rec, b: Rec) => number {
  return (a, b) => {
    const [ta, tb] = [timeOf(a), timeOf(b)];
    if (Number.isFinite(ta) && Number.isFinite(tb) && ta !== tb) return ta - tb;
    return (order.get(uuidOf(a)!) ?? 0) - (order.get(uuidOf(b)!) ?? 0);
  };
}

const parentRec = (tree: Tree, r: Rec) => (parentOf(r) === null ? null : tree.byUuid.get(parentOf(r)!) ?? null);

function walkUp(from: Rec | null, next: (r: Rec) => Rec | null): Rec[] {
  const out: Rec[] = [];
  const seen = new Set<string>();
  for (let r = from; r !== null && !seen.has(uuidOf(r)!); r = next(r)) {
    seen.add(uuidOf(r)!);
    out.push(r);
  }
  return out.reverse();
}

export const currentBranch = (tree: Tree) => walkUp(tree.newestLeaf, (r) => parentRec(tree, r));

const boundaryParent = (tree: Tree, r: Rec) =>
  isCompactBoundary(r) && typeof r.logicalParentUuid === "string" ? tree.byUuid.get(r.logicalParentUuid) ?? null : null;

export const restorePath = (tree: Tree) => walkUp(tree.newestLeaf, (r) => parentRec(tree, r) ?? boundaryParent(tree, r));

/** For a compaction's new root, what the conversation had reached before it (null: a true start). */
function logicalParent(tree: Tree, r: Rec): Rec | null {
  const up = parentRec(tree, r) ?? boundaryParent(tree, r);
  if (up !== null || parentOf(r) !== null || !isCompactSummary(r)) return up;
  const cmp = compareBy(tree.order);
  const own = walkUp(r, (x) => parentRec(tree, x))[0];
  let best: Rec | null = null;
  for (const root of tree.roots) {
    const leaf = root === own ? undefined : tree.bestLeaf.get(uuidOf(root)!);
    if (leaf !== undefined && cmp(leaf, r) < 0 && (best === null || cmp(leaf, best) > 0)) best = leaf;
  }
  return best;
}

export const readingPath = (tree: Tree) => walkUp(tree.newestLeaf, (r) => logicalParent(tree, r));

/** What Claude Code resumes: up to a compaction boundary, its kept tail spliced in after the summary. */
export function resumedBranch(tree: Tree): Rec[] {
  const walked = walkUp(tree.newestLeaf, (r) => (isCompactBoundary(r) ? null : parentRec(tree, r)));
  const boundary = walked[0] !== undefined && isCompactBoundary(walked[0]) ? walked[0] : null;
  const path = boundary === null ? walked : walked.slice(1);
  const meta = isObject(boundary?.compactMetadata) ? boundary.compactMetadata : null;
  const segment = isObject(meta?.preservedSegment) ? meta.preservedSegment : null;
  const at = segment === null ? -1 : path.findIndex((r) => uuidOf(r) === segment.anchorUuid);
  if (segment === null || at < 0) return path;
  const inPath = new Set(walked.map(uuidOf));
  const tail = tree.byUuid.get(String(segment.tailUuid));
  const kept = walkUp(tail === undefined || inPath.has(uuidOf(tail)) ? null : tail, (r) => {
    const up = uuidOf(r) === segment.headUuid ? null : parentRec(tree, r);
    return up === null || inPath.has(uuidOf(up)) ? null : up;
  });
  return [...path.slice(0, at + 1), ...kept, ...path.slice(at + 1)];
}

export function outline(tree: Tree): Item[] {
  const placed = new Set<string>();
  const path = readingPath(tree);
  const items: Item[] = [];
  path.forEach((r, i) => {
    placed.add(uuidOf(r)!);
    items.push(...itemsOf(tree, r));
    const others = (tree.children.get(uuidOf(r)!) ?? []).filter((c) => c !== path[i + 1]);
    if (others.length > 0) items.push({ kind: "branches", at: uuidOf(r), branches: others.map((c) => line(tree, c, placed)) });
  });
  const loose = tree.roots.filter((r) => !placed.has(uuidOf(r)!));
  if (loose.length > 0) items.push({ kind: "branches", at: null, branches: loose.map((r) => line(tree, r, placed)) });
  const unreached = tree.nodes.filter((r) => !placed.has(uuidOf(r)!)); // records in a parentUuid loop
  if (unreached.length > 0) items.push({ kind: "branches", at: null, branches: [unreached.map((record) => ({ kind: "record" as const, record }))] });
  return items;
}

/** Deeper forks are listed one after another at this depth: the outline and its renderers never recurse as deep as a hostile tree. */
export const MAX_NESTING = 16;

function line(tree: Tree, start: Rec, placed: Set<string>, depth = 1): Item[] {
  const items: Item[] = [];
  const deferred: { at: string; start: Rec }[] = [];
  const walk = (from: Rec, into: Item[]) => {
    for (let r: Rec | undefined = from; r !== undefined && !placed.has(uuidOf(r)!);) {
      const id: string = uuidOf(r)!;
      placed.add(id);
      into.push(...itemsOf(tree, r));
      const kids: Rec[] = tree.children.get(id) ?? [];
      const next: Rec | undefined = kids.find((k) => tree.bestLeaf.get(uuidOf(k)!) === tree.bestLeaf.get(id)) ?? kids.at(-1);
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

function itemsOf(tree: Tree, r: Rec): Item[] {
  if (isCompactBoundary(r)) return [{ kind: "compaction", record: r }];
  if (startsCompaction(tree, r)) return [{ kind: "compaction", record: r }, { kind: "record", record: r }];
  return [{ kind: "record", record: r }];
}

const startsCompaction = (tree: Tree, r: Rec) => isCompactSummary(r) && !isCompactBoundary(parentRec(tree, r) ?? {});

export function flatten(items: Item[]): Rec[] {
  return items.flatMap((item) =>
    item.kind === "record" ? [item.record] : item.kind === "compaction" ? (isCompactBoundary(item.record) ? [item.record] : []) : item.branches.flatMap(flatten)
  );
}

export function shape(tree: Tree): { leaves: number; forks: number; compactions: number } {
  const kids = (n: Rec) => tree.children.get(uuidOf(n)!)?.length ?? 0;
  const count = (test: (n: Rec) => boolean) => tree.nodes.filter(test).length;
  return {
    leaves: count((n) => kids(n) === 0),
    forks: count((n) => kids(n) > 1),
    compactions: count((n) => isCompactBoundary(n) || startsCompaction(tree, n)),
  };
}
