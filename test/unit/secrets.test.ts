// Finding and redacting secrets (src/protocol/secrets.ts): every rule on secrets of real shapes made afresh each run, where a record holds
// them (prompt text, a tool's input, a tool's result, thinking); the look-alikes stay; a placeholder names the kind and a keyed fingerprint,
// the same for the same secret; a redacted record keeps its shape. Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { findSecrets, Redactor, redactRecords, stringsOf } from "../../src/protocol/secrets.ts";
import { messageHash } from "../../src/protocol/lineage.ts";
import { nearMisses, randomOf, secretSamples } from "../support/secret-samples.ts";
import type { Rec } from "../support/claude.ts";

const rootKey = () => randomBytes(32).toString("hex");
const PLACEHOLDER = /\[REDACTED ([a-z0-9-]+) ([0-9a-f]{8})\]/g;

/** A conversation's records holding `text` where Claude Code puts text: a prompt, a tool's input and result, thinking. */
function records(text: string): Rec[] {
  return [
    { type: "user", uuid: "u1", message: { role: "user", content: [{ type: "text", text: `please use this:\n${text}\nthanks` }] } },
    {
      type: "assistant",
      uuid: "a1",
      message: {
        role: "assistant",
        content: [
          { type: "thinking", thinking: `The user pasted ${text}; I should not repeat it.`, signature: randomBytes(64).toString("base64") },
          { type: "tool_use", id: "toolu_1", name: "Bash", input: { command: `echo '${text}' > .env`, timeout: 5 } },
        ],
        usage: { input_tokens: 3, output_tokens: 4 },
      },
    },
    {
      type: "user",
      uuid: "u2",
      message: { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: `wrote ${text}` }] }] },
      toolUseResult: { stdout: text, stderr: "", interrupted: false },
    },
  ];
}

/** The shape of a JSON value: every key and every type, without the strings. */
const shape = (v: unknown): unknown =>
  typeof v === "string"
    ? "string"
    : Array.isArray(v)
    ? v.map(shape)
    : v !== null && typeof v === "object"
    ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]))
    : v;

describe("finding secrets", () => {
  for (const { kind, secret, line } of secretSamples()) {
    it(`${kind}: found as it is in a line a user pastes (${secret.slice(0, 12)}…)`, async () => {
      const found = await findSecrets(["before", `some text\n${line}\nmore text`, "after"]);
      assert.deepEqual(found.map((f) => [f.index, f.kind]), [[1, kind]]);
      assert.equal(found[0].value, secret.trim());
    });
  }

  for (const { what, text } of nearMisses()) {
    it(`${what} is not a secret`, async () => {
      assert.deepEqual(await findSecrets([text]), []);
      const values = records(text);
      assert.equal(await new Redactor(rootKey()).redact(values), values, "handed back untouched");
    });
  }

  for (const end of ["+", "/", "="]) {
    it(`an AWS secret key that ends in ${end} is found whole (secretlint's own rule misses it)`, async () => {
      const secret = `${randomOf(39, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/+")}${end}`;
      const found = await findSecrets([`AWS_SECRET_ACCESS_KEY=${secret}\nnext line`, `aws_secret_access_key: "${secret}"`]);
      assert.deepEqual(found.map((f) => [f.index, f.kind, f.value]), [[0, "aws-secret-access-key", secret], [1, "aws-secret-access-key", secret]]);
    });
  }

  it("texts linted together keep to their own: a finding names the text it is in, and one lint call's batch does not join two texts", async () => {
    const [a, b] = secretSamples().filter((s) => s.kind === "github-token");
    const filler = "x".repeat(600_000);
    const found = await findSecrets([filler, a.line, filler, filler, b.line, `${b.secret.slice(0, 20)}`, `${b.secret.slice(20)}`]);
    assert.deepEqual(found.map((f) => [f.index, f.value]), [[1, a.secret], [4, b.secret]]);
  });
});

describe("redacting records", () => {
  for (const { kind, secret, line } of secretSamples()) {
    it(`${kind}: gone from every string of every record, each mention one placeholder; the records keep their shape`, async () => {
      const before = records(line);
      const after = await new Redactor(rootKey()).redact(before);
      const text = JSON.stringify(after);
      for (const part of secret.split("\n").filter((p) => p.length >= 12)) {
        assert.ok(!text.includes(part), `no part of the secret remains: ${part.slice(0, 8)}…`);
      }
      const placeholders = stringsOf(after).flatMap((s) => [...s.matchAll(PLACEHOLDER)].map((m) => m[0]));
      assert.equal(placeholders.length, 5, "prompt, thinking, tool input, tool result, the tool's stdout");
      // A connection string runs to the next space, so "…/prod;" and "…/prod'" are two findings there.
      if (kind !== "postgre-sql-connection") assert.equal(new Set(placeholders).size, 1, "one secret, one placeholder");
      assert.equal([...placeholders[0].matchAll(PLACEHOLDER)][0][1], kind);
      assert.deepEqual(shape(after), shape(before), "same keys, same types, same numbers");
      assert.equal(after[1].message.content[0].signature, before[1].message.content[0].signature, "a signature is no secret");
      assert.deepEqual(JSON.parse(JSON.stringify(after)), after, "still plain JSON");
      assert.ok(before[0].message.content[0].text.includes(secret.trim()), "the input itself is not changed");
    });
  }

  it("the fingerprint is keyed: the same secret gives the same placeholder under one root's key, another under another's, and no part of a plain hash", async () => {
    const { secret, line } = secretSamples()[2];
    const key = rootKey();
    const [one] = await new Redactor(key).redact([{ text: line }]);
    const [again] = await new Redactor(key).redact([{ text: `again: ${line}` }]);
    const [other] = await new Redactor(rootKey()).redact([{ text: line }]);
    const hex = (v: { text: string }) => [...v.text.matchAll(PLACEHOLDER)][0][2];
    assert.equal(hex(one), hex(again));
    assert.notEqual(hex(one), hex(other));
    assert.ok(!createHash("sha256").update(secret).digest("hex").includes(hex(one)), "not the secret's plain sha256");
    assert.ok(!secret.includes(hex(one)), "not a piece of the secret");
  });

  it("a secret named once with its label is replaced where it appears bare too (the AWS secret key needs its label to be found)", async () => {
    const sample = secretSamples().find((s) => s.kind === "aws-secret-access-key")!;
    assert.deepEqual(await findSecrets([`the key is ${sample.secret}`]), [], "bare, it is not found");
    const after = await new Redactor(rootKey()).redact([{ text: sample.line }, { text: `the key is ${sample.secret}` }]);
    assert.ok(!JSON.stringify(after).includes(sample.secret));
    assert.match(after[1].text, /^the key is \[REDACTED aws-secret-access-key [0-9a-f]{8}\]$/);
  });

  it("a secretlint-disable comment in a transcript waives nothing", async () => {
    const { secret } = secretSamples()[2];
    const found = await findSecrets([`// secretlint-disable\nconst token = "${secret}";\n// secretlint-enable`]);
    assert.deepEqual(found.map((f) => f.value), [secret]);
  });

  it("redactRecords: a changed message keeps its original hash, sealed; only its own key opens it; a thinking block that held a secret is left out", async () => {
    const { secret, line } = secretSamples()[2];
    const key = rootKey();
    const original = {
      uuid: randomUUID(),
      message: { role: "assistant", content: [{ type: "thinking", thinking: `so ${line}`, signature: "c2ln" }, { type: "text", text: line }] },
    };
    const clean = { uuid: randomUUID(), message: { role: "user", content: "nothing to hide" } };
    const [after, untouched] = await redactRecords<Rec>([original, clean], new Redactor(key));
    assert.ok(!JSON.stringify(after).includes(secret));
    assert.deepEqual(after.message.content.map((b: Rec) => b.type), ["text"], "the thinking block is left out: its signature would no longer match");
    assert.equal(original.message.content.length, 2, "the input itself is not changed");
    const hash = messageHash(original.message.role, original.message.content);
    const sealed = String((after as Record<string, unknown>).sessiontap_hash);
    assert.ok(!sealed.includes(hash), "the hash is not there in the clear");
    assert.equal(new Redactor(key).unseal(after), hash, "the root's own key opens it");
    assert.equal(new Redactor(rootKey()).unseal(after), null, "another root's does not");
    assert.notEqual(new Redactor(key).unseal({ ...after, uuid: randomUUID() }), hash, "the pad is the record's own");
    assert.deepEqual(untouched, clean, "a record with no secret is as it was, unsealed");
  });
});
