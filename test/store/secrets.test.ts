// Issue 31: secrets never reach the shared store (SESSIONTAP_REDACT=shared, the default) while the tree keeps them exactly; with `all`
// the tree is redacted too. A tap started again over what it wrote catches up from redacted records without writing a turn twice.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { Redactor } from "../../src/protocol/secrets.ts";
import { Conversation } from "../support/client.ts";
import { freshDatabase, pollAsync, storedRows, storeStatus, type TestDatabase } from "../support/pg.ts";
import { secretSamples } from "../support/secret-samples.ts";
import { textReply, thinkingReply } from "../support/sse-build.ts";
import { readTree, startTestTap } from "../support/tap.ts";
import { startStub, type StubUpstream } from "../support/stub-upstream.ts";

const WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];

/** Every line of each secret long enough to tell (a private key's body is many lines). */
const secretLines = (secrets: string[]) => secrets.flatMap((s) => s.split("\n")).filter((line) => line.length >= 16 && !line.startsWith("-----"));

for (const mode of ["shared", "all"] as const) {
  describe(`SESSIONTAP_REDACT=${mode}: the store holds no secret and every other word`, () => {
    let db: TestDatabase;
    let stub: StubUpstream;
    let dir: string;
    const samples = secretSamples();
    const secrets = samples.map((s) => s.secret);
    const prompt = `${WORDS.slice(0, 3).join(" ")}, deploy with these:\n${samples.map((s) => s.line).join("\n")}\n${WORDS.slice(3).join(" ")}`;
    const github = samples.find((s) => s.kind === "github-token")!.secret;
    const aws = samples[0].secret;
    before(async () => {
      db = await freshDatabase(`secrets-${mode}`);
      stub = await startStub();
      dir = mkdtempSync(`${tmpdir()}/sessiontap-secrets-`);
    });
    after(async () => {
      await stub?.close();
      await db?.drop();
      rmSync(dir, { recursive: true, force: true });
    });

    it("one secret, one placeholder (the exports'); the thinking that held one is left out; started again, the tap writes the next turn once", async () => {
      const env = { SESSIONTAP_STORE: db.url, SESSIONTAP_REDACT: mode };
      const session = `secrets-${mode}`;
      const system = "Primary working directory: /home/me/proj";
      let c: Conversation;
      {
        await using tap = await startTestTap(stub.url, env, {}, dir);
        await storeStatus(tap.url);
        stub.enqueue({ kind: "sse", chunks: thinkingReply(`the token ${github} is a GitHub one`, `Using ${aws} now, golf.`) });
        c = new Conversation(tap.url, session, { system });
        assert.equal((await c.say([{ type: "text", text: prompt }])).status, 200);
        await tap.settled();
      }
      const rows = await pollAsync(async () => (await storedRows(db.sql)).filter((r) => r.session_id === session), (r) => r.length >= 2);
      assert.equal(rows.length, 2);
      const stored = rows.map((r) => r.text).join("\n");
      for (const line of secretLines(secrets)) assert.ok(!stored.includes(line), `a secret's line reached the store: ${line.slice(0, 4)}…`);
      for (const word of [...WORDS, "deploy", "golf", "AWS_ACCESS_KEY_ID=", "GH_TOKEN=", "the bot token is"]) assert.ok(stored.includes(word), word);
      const redactor = new Redactor(readFileSync(`${dir}/mirror/.binding-key`, "utf8").trim());
      for (const { kind, secret } of samples.filter((s) => !s.secret.includes("\n"))) {
        assert.ok(stored.includes(JSON.stringify(redactor.placeholder(kind, secret)).slice(1, -1)), `the placeholder of ${kind}, as exports make it`);
      }
      const assistant = rows[1].entry as { message: { content: { type: string; text?: string }[] }; sessiontap_hash?: string };
      assert.deepEqual(assistant.message.content.map((b) => b.type), ["text"], "the thinking block that held a secret is left out of the store");
      assert.equal(assistant.message.content[0].text, `Using ${redactor.placeholder("aws-access-key-id", aws)} now, golf.`);
      assert.match(String(assistant.sessiontap_hash), /^[0-9a-f]{8}:[0-9a-f]{64}$/);

      const [file, records] = [...readTree(`${dir}/mirror/${session}`)][0];
      const tree = readFileSync(`${dir}/mirror/${session}/${file}`, "utf8");
      if (mode === "shared") {
        assert.equal((records[0].message as { content: { text: string }[] }).content[0].text, prompt, "the tree holds the prompt exactly");
        assert.deepEqual((records[1].message as { content: unknown[] }).content, [
          { type: "thinking", thinking: `the token ${github} is a GitHub one`, signature: "c2lnbmVk" },
          { type: "text", text: `Using ${aws} now, golf.` },
        ], "and the answer, thinking and signature too");
      } else {
        for (const line of secretLines(secrets)) assert.ok(!tree.includes(line), "with all, no secret's line in the tree either");
        assert.deepEqual(records.map((r) => r.uuid), rows.map((r) => r.entry.uuid));
      }

      // Started again, the tap reads its lineage back from redacted records: the next request (secrets and all) continues it.
      await using again = await startTestTap(stub.url, env, {}, dir);
      await storeStatus(again.url);
      const next = new Conversation(again.url, session, { system });
      next.messages.push(...c.messages);
      stub.enqueue({ kind: "sse", chunks: textReply("Done, hotel.") });
      assert.equal((await next.say([{ type: "text", text: "and india" }])).status, 200);
      await again.settled();
      const all = await pollAsync(async () => (await storedRows(db.sql)).filter((r) => r.session_id === session), (r) => r.length >= 4);
      assert.equal(all.length, 4, "the first turn is not written again");
      assert.equal(all[2].entry.parentUuid, rows[1].entry.uuid, "the new turn hangs from the answer before it");
      const treeAfter = [...readTree(`${dir}/mirror/${session}`).values()].flat();
      assert.equal(treeAfter.length, 4, "nor in the tree");
      assert.equal(treeAfter[2].parentUuid, records[1].uuid);
    });
  });
}
