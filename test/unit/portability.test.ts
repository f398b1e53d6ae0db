// What the storage layer assumes about the platform, and its fallback where the assumption does not hold:
// a process's start time from Linux's /proc (nowhere else).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { hostname } from "node:os";
import process from "node:process";
import { type FsAdapter, nodeFs } from "../../src/storage/fs-adapter.ts";
import { ownerAlive, processStart } from "../../src/storage/dir-lock.ts";

describe("platform assumptions, with their fallbacks", () => {
  it("a process's start time is read from /proc on Linux only; elsewhere it is unknown, never misread", async () => {
    const reads: string[] = [];
    const watching: FsAdapter = { ...nodeFs, readText: (path) => (reads.push(path), nodeFs.readText(path)) };
    for (const platform of ["darwin", "win32", "freebsd"]) assert.equal(await processStart(watching, process.pid, platform), null, platform);
    assert.deepEqual(reads, [], "no /proc path is read off Linux");
    const here = await processStart(watching, process.pid);
    if (process.platform === "linux") assert.match(here ?? "", /^\d+$/, "clock ticks since boot");
    else assert.equal(here, null);
  });

  it("with no start time, a lock owner is judged by its pid alone", async () => {
    const host = hostname();
    assert.equal(await ownerAlive(nodeFs, { pid: process.pid, start: null, host }), true);
    assert.equal(await ownerAlive(nodeFs, { pid: 2 ** 22 + 12345, start: null, host }), false, "no such pid");
  });
});
