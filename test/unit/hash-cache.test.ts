import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { HashCache } from "../../src/protocol/hash-cache.ts";
import { hashMessages } from "../../src/protocol/lineage.ts";

describe("HashCache", () => {
  it("computes once per distinct key and remembers it", () => {
    const cache = new HashCache();
    let computed = 0;
    const compute = () => String(++computed);
    assert.equal(cache.get("a", compute), "1");
    assert.equal(cache.get("a", compute), "1");
    assert.equal(cache.get("b", compute), "2");
    assert.deepEqual([cache.hits, cache.misses], [1, 2]);
  });

  it("stays within its byte bound, dropping the least recently used first", () => {
    const cache = new HashCache(40); // 20 UTF-16 units of keys
    let computed = 0;
    const compute = () => String(++computed);
    cache.get("aaaaaaaaaa", compute); // 20 bytes
    cache.get("bbbbbbbbbb", compute); // 40 bytes
    cache.get("aaaaaaaaaa", compute); // a is now the most recent
    cache.get("cccccccccc", compute); // evicts b
    assert.equal(cache.get("aaaaaaaaaa", compute), "1");
    assert.equal(cache.get("bbbbbbbbbb", compute), "4", "b was evicted and computed again");
  });

  it("gives hashMessages the same hashes as without it, and skips the work the second time", () => {
    const messages = [{ role: "user", content: "hi" }, { role: "system", content: "env" }, { role: "assistant", content: [{ type: "text", text: "yo" }] }];
    const cache = new HashCache();
    assert.deepEqual(hashMessages(messages, cache), hashMessages(messages));
    hashMessages(JSON.parse(JSON.stringify(messages)), cache);
    assert.equal(cache.hits, 3);
  });
});
