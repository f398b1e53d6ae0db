// The viewer's browser client is ordinary TypeScript modules (src/viewer/client/), bundled by Bun's bundler
// into the page's one nonced script (clientScript in src/viewer/page.ts): in the compiled binary at build time, from
// source the first time the page is asked for. Here the script the page carries, as this runtime bundles it
// (Bun in this process; under Deno, Bun's CLI from the dev dependencies), is parsed, searched for module
// syntax, and checked by the TypeScript compiler alone with only the ES and DOM libraries, so anything the
// bundle left for the browser to supply that it lacks fails here, not in a reader's browser. The same check
// runs on the compiled binary's page in test/binary/viewer.test.ts; the browser tests run the page.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { bundleScript } from "../../src/runtime/index.ts";
import { clientScript, viewerPage } from "../../src/viewer/page.ts";
import { undeclaredNames } from "../support/free-names.ts";
import { inlineScript } from "../support/inline-script.ts";

const NONCE = "dGVzdC1ub25jZQ==";

/** A value of this module: a function that uses it is not self-contained. */
const OUTSIDE = "not in the browser";
function closesOver(): string {
  return OUTSIDE;
}

describe("the viewer's inline client script", () => {
  it("is the page's one nonced script: the client, bundled", async () => {
    const bundled = await clientScript(bundleScript);
    const script = inlineScript(viewerPage(NONCE, "1.2.3", bundled), NONCE);
    assert.equal(script, bundled);
    assert.equal(await clientScript(bundleScript), bundled, "bundled once per process");
  });

  it("is a classic script: it parses, with no import or require, and cannot end the <script> early", async () => {
    const script = inlineScript(viewerPage(NONCE, "1.2.3", await clientScript(bundleScript)), NONCE);
    assert.doesNotMatch(script, /\bimport\b|\brequire\b/);
    assert.doesNotMatch(script, /<\/script/i);
    assert.doesNotThrow(() => new Function(script), "the script parses");
    const hostile = inlineScript(viewerPage(NONCE, "1", `var s = "</script><script>alert(1)";`), NONCE);
    assert.doesNotMatch(hostile, /<\/script/i, "a </script> in the client's own text is escaped");
  });

  it("uses no name that neither it nor the browser declares", async () => {
    assert.deepEqual(undeclaredNames(await clientScript(bundleScript)), []);
  });

  it("the check finds a name a function closed over from its module", () => {
    assert.deepEqual(undeclaredNames(`"use strict";(${closesOver.toString()})();`), ["OUTSIDE (line 2)"]);
  });
});
