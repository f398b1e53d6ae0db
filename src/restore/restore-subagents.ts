/**
 * Restore's subagents: each subagent conversation the mirror holds for the session is written where
 * Claude Code 2.1.328 keeps it, `<project>/<session>/subagents/agent-<agent id>.jsonl` (its current branch,
 * sidechain records carrying the agent id; see transcript/restore-plan.ts). A file already there is kept when
 * it holds conversation (replaced with --force, a backup beside it) and replaced when it is a stub.
 */
import { planRestore } from "../transcript/restore-plan.ts";
import { judge, type MirrorFacts, mirrorFacts, type TranscriptState } from "../transcript/transcript-state.ts";
import { readFileFacts } from "../storage/claude-projects.ts";
import { buildTree } from "../transcript/tree.ts";
import type { FsAdapter } from "../storage/fs-adapter.ts";
import { compactJson } from "../transcript/json-text.ts";
import type { OtherConversations } from "../storage/mirror-reader.ts";
import { publishNew, replaceWithBackup } from "../storage/publish.ts";

/** Agent ids that can be a file name (Claude Code's are hex). */
const SAFE_AGENT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** What restore did (or would do) with one subagent. */
export interface SubagentOutcome {
  agentId: string;
  path: string;
  existing: TranscriptState;
  action: "create" | "replace" | "keep" | "failed";
  records: number;
  backup: string | null;
  error?: string;
}

/** One subagent ready to write. */
export interface Planned {
  agentId: string;
  path: string;
  data: string;
  records: number;
  mirror: MirrorFacts;
}

/** The subagents of `others` as Claude Code would keep them next to `mainPath` (`<project>/<session>.jsonl`). */
export function planSubagents(
  others: OtherConversations,
  target: { sessionId: string; cwd: string },
  mainPath: string,
): { planned: Planned[]; unnamed: number } {
  const dir = `${mainPath.slice(0, -".jsonl".length)}/subagents`;
  const planned: Planned[] = [];
  let unnamed = 0;
  for (const agent of others.agents) {
    const fromRecords = agent.records.map((r) => r.agentId).find((id): id is string => typeof id === "string" && id !== "");
    const agentId = fromRecords ?? (agent.dir.startsWith("agent-") ? agent.dir.slice("agent-".length) : agent.dir);
    if (!SAFE_AGENT.test(agentId)) {
      unnamed++;
      continue;
    }
    const tree = buildTree(agent.records);
    const plan = planRestore(tree, { ...target, agentId });
    if (plan.records.length === 0) continue;
    planned.push({
      agentId,
      path: `${dir}/agent-${agentId}.jsonl`,
      data: plan.records.map((r) => compactJson(r) + "\n").join(""),
      records: plan.records.length,
      mirror: mirrorFacts(tree),
    });
  }
  return { planned, unnamed };
}

/** Writes (or, with `dryRun`, only judges) each planned subagent; never throws. */
export async function writeSubagents(fs: FsAdapter, planned: Planned[], options: { force: boolean; dryRun: boolean; now: number }): Promise<SubagentOutcome[]> {
  const out: SubagentOutcome[] = [];
  for (const p of planned) {
    const outcome: SubagentOutcome = { agentId: p.agentId, path: p.path, existing: "missing", action: "create", records: p.records, backup: null };
    out.push(outcome);
    try {
      const info = await fs.lstat(p.path);
      if (info !== null && !info.isFile) throw new Error(`${p.path} is not a regular file; left alone`);
      const read = info === null ? { facts: null, warning: null } : await readFileFacts(fs, p.path);
      if (read.warning) throw new Error(`${read.warning}; left alone`);
      outcome.existing = judge(read.facts, p.mirror, { now: options.now }).state;
      outcome.action = outcome.existing === "missing" ? "create" : outcome.existing !== "intact" || options.force ? "replace" : "keep";
      if (options.dryRun || outcome.action === "keep") continue;
      if (info === null) {
        await fs.mkdir(p.path.slice(0, p.path.lastIndexOf("/")), 0o700);
        const done = await publishNew(fs, p.path, p.data);
        if (done.kind !== "created") throw new Error(`${p.path} appeared while restoring; left alone`);
      } else {
        const done = await replaceWithBackup(fs, p.path, p.data, info, options.now);
        if (done.kind !== "replaced") throw new Error(`${p.path} changed while restoring; left alone`);
        outcome.backup = done.backup;
      }
    } catch (error) {
      outcome.action = "failed";
      outcome.error = (error as Error).message.split("\n")[0];
    }
  }
  return out;
}
