// What redaction adds to a commit on its way to the store (src/protocol/secrets.ts redactRecords): a user and an assistant record of
// 2 KB, 100 KB and 1 MB, clean or holding a key. Runs under Bun and Deno (`bun scripts/bench/redact.mjs`, `deno run -A …`); prints JSON.
import { randomBytes, randomUUID } from "node:crypto";
import { Redactor, redactRecords } from "../../src/protocol/secrets.ts";

const redactor = new Redactor(randomBytes(32).toString("hex"));
const prose = (bytes) => Array.from({ length: Math.ceil(bytes / 48) }, (_, i) => `line ${i}: the deploy ran, ${randomUUID()}`).join("\n").slice(0, bytes);
const record = (role, text) => ({ type: role, uuid: randomUUID(), message: { role, content: [{ type: "text", text }] } });
const commit = (
  bytes,
  secret,
) => [record("user", prose(bytes / 2)), record("assistant", `${prose(bytes / 2)}${secret ? `\nGH_TOKEN=ghp_${randomBytes(18).toString("hex")}` : ""}`)];

const out = { runtime: globalThis.Bun ? `bun ${globalThis.Bun.version}` : `deno ${globalThis.Deno?.version.deno}` };
for (const [name, bytes] of [["2KB", 2048], ["100KB", 100 * 1024], ["1MB", 1024 * 1024]]) {
  for (const secret of [false, true]) {
    const records = commit(bytes, secret);
    await redactRecords(records, redactor); // warm-up
    const times = [];
    for (const end = performance.now() + 1500; times.length < 200 && (times.length < 5 || performance.now() < end);) {
      const t = performance.now();
      await redactRecords(records, redactor);
      times.push(performance.now() - t);
    }
    out[`${name}${secret ? " with a key" : ""}`] = Number(times.sort((a, b) => a - b)[Math.floor(times.length / 2)].toFixed(2));
  }
}
console.log(JSON.stringify(out));
