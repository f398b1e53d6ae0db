/**
 * The real interactive Claude Code CLI in a pseudo-terminal (test/support/terminal.ts), driven as a person
 * would: past its first-run questions, then prompts typed and answered, `/compact`, a rewind, and quitting.
 * Every step waits for what the screen shows, bounded in time.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { CLAUDE_BIN, claudeEnv, type Scratch } from "./claude.ts";
import type { StubUpstream } from "./stub-upstream.ts";
import { claudeInput, openRewindList, TerminalSession } from "./terminal.ts";

/** A running interactive CLI and the steps a person takes in it. */
export interface Interactive {
  term: TerminalSession;
  /** True when the input box is empty and nothing is running. */
  idle(screen: string): boolean;
  /** Types `prompt`, sends it, and waits for the stub's answer to it on screen. */
  say(prompt: string): Promise<void>;
  /** Runs `/compact` and waits for the compaction. */
  compact(): Promise<void>;
  /** Rewinds (Esc Esc, "Restore conversation") to before the last prompt, `prompt`, and clears the input box. */
  rewindLast(prompt: string): Promise<void>;
  /** Quits (Ctrl-C twice) and waits for the exit. */
  quit(): Promise<void>;
}

/**
 * Starts `claude ARGS` in `scratch.project` against `baseUrl` (a first-run config that trusts the project,
 * the test API key accepted), with `env` over the usual test environment; `bin` picks the release.
 */
export async function startInteractive(
  stub: StubUpstream,
  opts: { baseUrl: string; scratch: Scratch; args?: string[]; env?: Record<string, string>; bin?: string },
): Promise<Interactive> {
  const { scratch } = opts;
  writeFileSync(
    join(scratch.home, ".claude.json"),
    JSON.stringify({ hasCompletedOnboarding: true, projects: { [scratch.project]: { hasTrustDialogAccepted: true } } }),
  );
  const env = { ...claudeEnv(opts.baseUrl, opts.scratch), ...opts.env };
  for (const [k, v] of Object.entries(env)) if (v === "") delete env[k];
  const term = await TerminalSession.start({ command: [opts.bin ?? CLAUDE_BIN, ...(opts.args ?? [])], cwd: scratch.project, env, width: 200, height: 50 });
  const idle = (s: string) => claudeInput(s) === "" && !/esc to interrupt/i.test(s);
  const answered = (s: string, before: number) => [...s.matchAll(/Done \(reply (\d+)\)\./g)].some((m) => Number(m[1]) > before) && idle(s);
  await term.waitFor("the API key question", /Do you want to use this API key\?/, 30_000);
  await term.press("Up");
  await term.waitFor("Yes selected", /❯ Yes/, 5_000);
  await term.press("Enter");
  return {
    term,
    idle,
    async say(prompt) {
      await term.waitFor("an empty, idle prompt", idle);
      const before = stub.requests.length;
      await term.type(prompt);
      await term.waitFor(`"${prompt}" in the input box`, (s) => claudeInput(s) === prompt, 5_000);
      await term.press("Enter");
      await term.waitFor(`the answer to "${prompt}"`, (s) => answered(s, before), 30_000);
    },
    async compact() {
      await term.waitFor("an empty, idle prompt", idle);
      await term.type("/compact");
      await term.waitFor("the /compact completion", (s) => claudeInput(s) === "/compact" && /Free up context/.test(s), 5_000);
      await term.press("Enter");
      await term.waitFor("the compaction", /Compacted \(ctrl\+o to see full summary\)/, 20_000);
    },
    async rewindLast(prompt) {
      await term.waitFor("an empty, idle prompt", idle);
      await openRewindList(term);
      await term.press("Up");
      await term.waitFor(`"${prompt}" selected`, new RegExp(`^\\s+❯ ${prompt}\\s*$`, "m"), 5_000);
      await term.press("Enter");
      await term.waitFor("the restore options", /❯ 1\. Restore conversation/, 5_000);
      await term.press("Enter");
      await term.waitFor("the rewound prompt back in the input box", (s) => claudeInput(s) === prompt, 5_000);
      await term.press("C-u");
    },
    async quit() {
      await term.press("C-c");
      await term.waitFor("the exit hint", /Press Ctrl-C again to exit/, 5_000);
      await term.press("C-c");
      await term.waitForExit(10_000);
    },
  };
}
