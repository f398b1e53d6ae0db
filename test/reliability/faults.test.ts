import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { failingEngineFs } from "../support/faulty-fs.ts";
import { type StubUpstream, textReply } from "../support/stub-upstream.ts";
import { allRecords, readEvents, type TestTap, withTap } from "../support/tap.ts";
import { Conversation } from "../support/client.ts";

describe("filesystem faults: ENOSPC, EACCES, EROFS, EIO", () => {
  let stub: StubUpstream;
  let tap: TestTap;
  const faults = failingEngineFs();
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => void unhandled.push(reason);
  withTap((started) => ({ stub, tap } = started), { deps: { engineSeams: faults.seams } });
  before(async () => {
    process.on("unhandledRejection", onUnhandled);
  });
  after(async () => {
    process.off("unhandledRejection", onUnhandled);
  });

  for (const code of ["ENOSPC", "EACCES", "EROFS", "EIO"]) {
    it(`${code}: the client is unaffected, the events log says so, the records wait and are written once the disk recovers`, async () => {
      const session = `faulty-${code}`;
      const c = new Conversation(tap.url, session);
      await faults.fail(code);
      const events = textReply(`answer under ${code}`, { deltas: 4 });
      stub.enqueue({ kind: "sse", chunks: events });
      const first = await c.say("first");
      assert.equal(new TextDecoder().decode(first.raw), events.join(""), "the client's bytes are the upstream's");
      const second = await c.say("second");
      assert.equal(second.status, 200);
      await tap.engine!.query("mirror.flush", 300);
      const logged = readEvents(tap.root).filter((e) => e.action === "error" && String(e.error).includes(code));
      assert.ok(logged.length >= 1, `an events-log line names ${code}`);
      assert.equal(allRecords(`${tap.root}/${session}`).length, 0);
      assert.equal((await tap.engine!.query("stats")).queued, 2, "both commits wait in memory");
      await faults.fail(null);
      await tap.engine!.query("mirror.flush", 5000);
      const records = allRecords(`${tap.root}/${session}`);
      assert.deepEqual(records.map((r) => r.type), ["user", "assistant", "user", "assistant"]);
      assert.equal(records.filter((r) => r.reconstructed).length, 0);
      assert.equal((await tap.engine!.query("stats")).queued, 0);
      assert.deepEqual(unhandled, []);
    });
  }

  it("injected at least one fault per code", async () => {
    assert.ok((await faults.injected()) >= 4);
    assert.equal((await tap.engine!.query("stats")).dropped, 0, "nothing had to be dropped");
  });
});
