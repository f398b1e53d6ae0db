// The environment, wherever the client puts it (docs/DESIGN.md "Where the environment travels"): each real
// capture — Claude Code 2.1.328 (tool session; interactive with /compact and a rewind) and 2.1.332 with its
// default model and with claude-sonnet-4-5 — replayed through a real tap with the headers Claude Code sent:
// every record of the session's main conversation carries the cwd, git branch, entrypoint and version
// Claude Code wrote into its own records, and nothing the readers refuse as null (docs/DESIGN.md "Readable
// by other tools").
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { type StubUpstream } from "../support/stub-upstream.ts";
import { readTree, type TestTap, withTap } from "../support/tap.ts";
import { capturedRequests, capturedTranscript } from "../support/captures.ts";
import { replayCapture } from "../support/recover.ts";
import type { Rec } from "../support/claude.ts";

const CAPTURES = [
  "cc-2.1.328-tool-session",
  "cc-2.1.328-interactive-compact-rewind",
  "cc-2.1.332-tool-session/default-model",
  "cc-2.1.332-tool-session/sonnet-4-5",
];

describe("the environment of every mirror record, from the real captures replayed through a tap", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  const mirrored = new Map<string, { session: string; files: [string, Rec[]][] }>();

  withTap((started) => ({ stub, tap } = started));
  before(async () => {
    for (const capture of CAPTURES) {
      const session = await replayCapture(tap, stub, capture);
      await tap.engine!.query("mirror.flush", 5_000);
      const files = [...readTree(tap.root).entries()].filter(([path]) => path.startsWith(`${session}/`)) as [string, Rec[]][];
      mirrored.set(capture, { session, files });
    }
  });

  for (const capture of CAPTURES) {
    it(`${capture}: cwd, gitBranch, entrypoint and version as Claude Code wrote them, on every record`, () => {
      const { files } = mirrored.get(capture)!;
      const main = files.filter(([path]) => path.split("/").length === 2).flatMap(([, records]) => records);
      assert.ok(main.filter((r) => r.type === "assistant").length >= 3, `${capture}: ${files.map(([p, r]) => `${p} ${r.length}`).join(", ")}`);
      const own = capturedTranscript(capture).find((r: Rec) => r.type === "assistant")!;
      const inGit = !JSON.stringify(capturedRequests(capture)[0].body).includes("Is a git repository: false");
      for (const r of main) {
        assert.equal(r.cwd, own.cwd, `${r.type} ${r.uuid}`);
        assert.equal(r.version, own.version);
        assert.equal(r.entrypoint, own.entrypoint);
        // Outside git Claude Code writes "HEAD", which nothing on the wire says: the mirror leaves it out.
        if (inGit) assert.equal(r.gitBranch, own.gitBranch);
        else assert.equal("gitBranch" in r, false);
        assert.equal(r.source, "sessiontap");
      }
    });
  }

  it("no record of any file (side requests included) holds a field ccusage refuses as null", () => {
    for (const { files } of mirrored.values()) {
      for (const [path] of files) {
        for (const line of readFileSync(`${tap.root}/${path}`, "utf8").split("\n").filter((l) => l !== "")) {
          const found = /"(id|cwd|model|speed|costUSD|version|sessionId|requestId|isApiErrorMessage|cache_read_input_tokens|cache_creation_input_tokens)":null/
            .exec(line);
          assert.equal(found, null, `${path}: ${found?.[0]}`);
          assert.match(JSON.parse(line).version, /^\d+\.\d+\.\d/);
        }
      }
    }
  });
});
