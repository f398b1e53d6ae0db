/**
 * Writes one commit into one conversation directory, the only way records reach the tree: the
 * directory is resolved below the root (no symlink on the way), its writer lock taken (one live writer
 * across processes), what other writers appended read and checked to belong to this session, then the
 * plan made and appended in one write, and only then the lineage advanced.
 */
import { planCommit } from "../protocol/commit-plan.ts";
import { Lineage, LineageReader } from "../protocol/lineage-state.ts";
import type { DirLocks } from "../storage/dir-lock.ts";
import type { AppendResult, Cursor, MirrorTree } from "../storage/mirror-tree.ts";
import type { CommitJob } from "../protocol/commit-job.ts";

/** What the mirror remembers of one directory. */
export interface DirState {
  lineage: Lineage;
  reader: LineageReader;
  cursor: Cursor;
}

/** A directory holds records of another session or agent: nothing is written to it. */
export class IdentityError extends Error {
  override name = "IdentityError";
  readonly code = "EIDENTITY";
}

/** A fresh, unread state; `outside` is the main lineage a side directory hangs from. */
export function newDirState(outside?: Lineage): DirState {
  const lineage = new Lineage();
  return { lineage, reader: new LineageReader(lineage, outside), cursor: new Map() };
}

/** Who a directory belongs to. */
export interface Owner {
  sessionId: string | null;
  agentId: string | null;
}

/** Checks that records found in a directory belong to it (seed 002: bind identity before any write). */
export function checkOwner(dir: string, records: Record<string, unknown>[], owner: Owner): void {
  for (const r of records) {
    if ((r.sessionId ?? null) !== owner.sessionId) {
      throw new IdentityError(`${dir} holds records of another session (${JSON.stringify(r.sessionId ?? null).slice(0, 80)}); nothing was written`);
    }
    if (owner.agentId !== null && (r.agentId ?? null) !== owner.agentId) {
      throw new IdentityError(`${dir} holds records of another agent; nothing was written`);
    }
  }
}

/** What a writer reports back. */
export interface Written {
  records: number;
  result: AppendResult | null;
  repaired: { file: string; bytes: number }[];
  malformedLines: number;
}

/** The pieces a directory write uses. */
export interface WriterDeps {
  tree: MirrorTree;
  locks: DirLocks;
  includeThinking: boolean;
}

/** Reads what others appended to `dir` since `state` last looked, under the caller's lock. */
export async function refresh(deps: WriterDeps, dir: string, state: DirState, owner: Owner): Promise<Omit<Written, "records" | "result">> {
  const cursor = new Map(state.cursor);
  const found = await deps.tree.catchUp(dir, cursor);
  checkOwner(dir, found.records, owner);
  for (const r of found.records) state.reader.apply(r);
  state.cursor = cursor;
  return { repaired: found.repaired, malformedLines: found.malformedLines };
}

/** Writes one job into `dir` (see the module comment). `main` refreshes and returns the main lineage for a side job. */
export async function writeJob(
  deps: WriterDeps, dir: string, scope: string, state: DirState, job: CommitJob, main: (() => Promise<Lineage>) | null,
): Promise<Written> {
  await deps.tree.ensureDir(dir);
  const release = await deps.locks.acquire(dir);
  try {
    const found = await refresh(deps, dir, state, { sessionId: job.base.sessionId, agentId: job.base.agentId });
    const mainLineage = main === null ? null : await main();
    const staged = planCommit(job, state.lineage, mainLineage, scope, deps.includeThinking);
    if (staged.records.length === 0) return { records: 0, result: null, ...found };
    const text = staged.records.map((r) => JSON.stringify(r) + "\n").join("");
    await deps.tree.ensureDir(dir); // once more right before the write: no directory on the way was swapped
    const result = await deps.tree.append(dir, text, state.cursor);
    // Only now, with the bytes on disk, does the lineage advance (SPEC §4 "Exactly once").
    for (const op of staged.ops) {
      if ("add" in op) state.lineage.add(op.add);
      else state.lineage.alias(op.alias.key, op.alias.uuid);
    }
    return { records: staged.records.length, result, ...found };
  } finally {
    await release();
  }
}
