/**
 * Plans one commit against the lineages it touches: the directory's own, seen over the main
 * conversation's for a side request (so what a side request repeats of the main chain is never copied),
 * and a compaction's boundary and kept tail. Pure and side-effect free.
 */
import { type HashedMessage, planRequest } from "./lineage.ts";
import { type Lineage, overlay } from "./lineage-state.ts";
import { type Compaction, stage, type Staged } from "./staging.ts";
import type { CommitJob } from "./commit-job.ts";

/** What planning reads of a commit. */
export type CommitInput = Pick<CommitJob, "messages" | "base" | "answer" | "requestTimestamp" | "compaction">;

/**
 * The kept tail of a compaction: the messages right after the summary that the main conversation
 * already holds (Claude Code keeps a short tail), never the last message (the new turn).
 */
export function keptTail(messages: HashedMessage[], main: Lineage): Compaction["keptTail"] {
  let count = 0;
  let headUuid: string | null = null;
  let tailUuid: string | null = null;
  const last = messages.findLastIndex((m) => m.role !== "system");
  for (let i = 1; i < last; i++) {
    const m = messages[i];
    if (m.role === "system") continue;
    const uuid = main.recordWithHash(m.hash);
    if (uuid === undefined) break;
    headUuid ??= uuid;
    tailUuid = uuid;
    count = i;
  }
  return headUuid !== null && tailUuid !== null ? { count, headUuid, tailUuid } : null;
}

/** Plans the records of one commit into `own`; `main` is the session's main lineage for a side request. */
export function planCommit(input: CommitInput, own: Lineage, main: Lineage | null, scope: string, includeThinking: boolean): Staged {
  const view = main !== null && main !== own ? overlay(own, main) : own;
  const plan = planRequest(view, input.messages);
  const compaction = input.compaction && plan.start === 0 ? { logicalParentUuid: own.leaf, keptTail: keptTail(input.messages, own) } : null;
  return stage({
    plan,
    messages: input.messages,
    base: input.base,
    scope,
    requestTimestamp: input.requestTimestamp,
    includeThinking,
    answer: input.answer,
    view,
    compaction,
  });
}
