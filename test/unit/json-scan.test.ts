import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { memberValue, scanArrayElements, skipValue } from "../../src/protocol/json-scan.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array, [s, e]: readonly [number, number]) => new TextDecoder().decode(b.subarray(s, e));

/** Values whose extent a scanner gets wrong if it is careless: escapes, brackets in strings, nesting, unicode. */
const TRICKY = [
  `"plain"`,
  `"a \\" quote"`,
  `"ends in a backslash \\\\"`,
  `"\\\\\\""`,
  `"brackets ] } [ { inside"`,
  `"é — 😀 \\ud83d"`,
  `{"a":[1,2,{"b":"}"}],"c":null}`,
  `[[],[[]],{}]`,
  `-12.5e+3`,
  `true`,
  `null`,
  `{"nested":${"[".repeat(200)}${"]".repeat(200)}}`,
];

describe("json-scan", () => {
  for (const value of TRICKY) {
    it(`skipValue finds the end of ${value.slice(0, 40)}`, () => {
      const bytes = enc(`  ${value} ,"next"`);
      const end = skipValue(bytes, 0);
      assert.equal(dec(bytes, [2, end]), value);
      assert.deepEqual(JSON.parse(dec(bytes, [0, end])), JSON.parse(value));
    });
  }

  it("scanArrayElements gives each element's span, from the array or from inside it", () => {
    const text = `[ ${TRICKY.join(" ,\n ")} ]`;
    const bytes = enc(text);
    const whole = scanArrayElements(bytes, 0)!;
    assert.deepEqual(whole.spans.map((s) => JSON.parse(dec(bytes, s))), JSON.parse(text));
    assert.equal(whole.end, bytes.length);
    const fromThird = scanArrayElements(bytes, whole.spans[2][0], true)!;
    assert.deepEqual(fromThird.spans, whole.spans.slice(2));
    assert.deepEqual(scanArrayElements(enc("[]"), 0), { spans: [], end: 2 });
  });

  it("memberValue finds a top-level member, not one nested or inside a string", () => {
    const body = enc(`{"model":"m","x":{"messages":1},"s":"\\"messages\\":[","messages":[{"role":"user"}],"stream":true}`);
    const span = memberValue(body, "messages")!;
    assert.deepEqual(JSON.parse(dec(body, span)), [{ role: "user" }]);
    assert.equal(memberValue(body, "absent"), null);
  });

  it("malformed or cut-off input is null or -1, never a throw or an index past the end", () => {
    for (const bad of [`"never closes`, `{"a":[1,2}`, `[1,2`, `{"a" 1}`, ``, `[1 2]`, `{"a":"b"`]) {
      const bytes = enc(bad);
      const end = skipValue(bytes, 0);
      assert.ok(end === -1 || end <= bytes.length, bad);
      const arr = scanArrayElements(bytes, 0);
      assert.ok(arr === null || arr.end <= bytes.length, bad);
      assert.doesNotThrow(() => memberValue(bytes, "a"));
    }
    assert.equal(scanArrayElements(enc(`[1 2]`), 0), null);
    assert.equal(memberValue(enc(`{"a":"b"`), "z"), null);
  });

  it("every chunk boundary of a real request body: the messages array ends where JSON.parse says", () => {
    const body = {
      model: "m",
      messages: [{ role: "user", content: [{ type: "text", text: 'hi "there" ]' }] }, { role: "assistant", content: "ok" }],
      system: "s",
      stream: true,
    };
    const text = JSON.stringify(body);
    const bytes = enc(text);
    const span = memberValue(bytes, "messages")!;
    const arr = scanArrayElements(bytes, span[0])!;
    assert.equal(arr.end, span[1]);
    assert.deepEqual(arr.spans.map((s) => JSON.parse(dec(bytes, s))), body.messages);
  });
});
