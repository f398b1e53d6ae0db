// A worker's error reaches health and stderr as one line, whichever runtime wrote it (docs/DESIGN.md "Off the relay path").
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { workerErrorLine } from "../../src/utils/worker-call.ts";

describe("workerErrorLine: a worker error message as one line", () => {
  it("Bun's message (source excerpt, caret, error, stack) keeps the error line", () => {
    const bun =
      '12 | self.onmessage = (m) => { throw new TypeError("boom"); };\n                                  ^\nTypeError: boom\n      at <anonymous> (/x/w.ts:12:55)\n';
    assert.equal(workerErrorLine(bun), "TypeError: boom");
    assert.equal(workerErrorLine("1 | x\n  ^\nerror: async boom\n  at y\n"), "error: async boom");
  });
  it("Deno's message drops its 'Uncaught'; a plain message stays as it is; nothing is nothing", () => {
    assert.equal(workerErrorLine("Uncaught TypeError: boom here"), "TypeError: boom here");
    assert.equal(workerErrorLine("the worker could not load"), "the worker could not load");
    assert.equal(workerErrorLine("\n  \n"), "");
  });
});
