import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { nodeFs } from "../../src/storage/fs-adapter.ts";
import { EVENTS_FILE, EventsLog } from "../../src/storage/events-log.ts";

describe("EventsLog", () => {
  it("rotates once past its bound into session-mirror-events.1.jsonl, keeping every line", async () => {
    const root = mkdtempSync(`${tmpdir()}/sessiontap-events-`);
    try {
      const log = new EventsLog(nodeFs, `${root}/mirror`, () => 0, { failed: () => {}, written: () => {} }, 1024);
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

  it("never rejects: a failing filesystem is a report and a count per event, and recovery is reported", async () => {
    const heard: string[] = [];
    let broken = true;
    const fs = {
      ...nodeFs,
      mkdir: async (p: string, m: number) => {
        if (broken) throw Object.assign(new Error("read-only"), { code: "EROFS" });
        await nodeFs.mkdir(p, m);
      },
    };
    const root = mkdtempSync(`${tmpdir()}/sessiontap-events-`);
    try {
      const log = new EventsLog(fs, `${root}/m`, () => 0, {
        failed: (e) => heard.push(`failed ${(e as { code: string }).code}`),
        written: () => heard.push("written"),
      });
      await log.log("start");
      await log.log("stop");
      assert.equal(log.failures, 2);
      broken = false;
      await log.log("again");
      assert.deepEqual(heard, ["failed EROFS", "failed EROFS", "written"]);
      assert.equal(JSON.parse(readFileSync(`${root}/m/${EVENTS_FILE}`, "utf8")).action, "again");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
