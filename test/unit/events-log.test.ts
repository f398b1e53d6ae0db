import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { EventsLog, EVENTS_FILE } from "../../src/storage/events-log.ts";

describe("EventsLog", () => {
  it("rotates once past its bound into session-mirror-events.1.jsonl, keeping every line", async () => {
    const root = mkdtempSync(`${tmpdir()}/sessiontap-events-`);
    try {
      const log = new EventsLog(nodeFs, `${root}/mirror`, () => 0, () => {}, 1024);
      for (let i = 0; i < 40; i++) void log.log("append", { dir: "s", records: i, note: "é" });
      await log.flush();
      const current = readFileSync(`${root}/mirror/${EVENTS_FILE}`, "utf8").split("\n").filter(Boolean);
      const older = readFileSync(`${root}/mirror/session-mirror-events.1.jsonl`, "utf8").split("\n").filter(Boolean);
      assert.ok(statSync(`${root}/mirror/${EVENTS_FILE}`).size <= 1024);
      assert.equal(JSON.parse(current.at(-1)!).records, 39, "the newest line is in the current file");
      assert.ok(older.length > 0 && older.every((l) => JSON.parse(l).action === "append"));
      assert.equal(statSync(`${root}/mirror/${EVENTS_FILE}`).mode & 0o777, 0o600);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("never rejects: a failing filesystem is one stderr line per event and a count", async () => {
    const lines: string[] = [];
    const broken = { ...nodeFs, mkdir: async () => { throw Object.assign(new Error("read-only"), { code: "EROFS" }); } };
    const log = new EventsLog(broken, "/nowhere", () => 0, (l) => lines.push(l));
    await log.log("start");
    await log.log("stop");
    assert.equal(log.failures, 2);
    assert.equal(lines.length, 2);
    assert.match(lines[0], /EROFS/);
  });
});
