// The viewer's browser client is typed TypeScript served as its functions' own source (src/viewer/client/
// inline.ts): the page's nonced script must be whole JavaScript that needs nothing but the browser. Here the
// script the page carries, as this runtime transpiled it, is parsed, searched for module syntax, and checked
// by the TypeScript compiler alone with only the ES and DOM libraries, so a part that closes over a value
// of its module (which the browser would not have) fails here, not in a reader's browser. The same check runs
// on the compiled binary's minified page in test/binary/viewer.test.ts; the browser tests run the page.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { basicsPart } from "../../src/viewer/client/basics.ts";
import { CLIENT_SCRIPT } from "../../src/viewer/client/inline.ts";
import { liveRecordsPart } from "../../src/viewer/client/live-records.ts";
import { navigationPart } from "../../src/viewer/client/navigation.ts";
import { restorePart } from "../../src/viewer/client/restore-panel.ts";
import { searchPart } from "../../src/viewer/client/search.ts";
import { sessionListPart } from "../../src/viewer/client/session-list.ts";
import { sessionViewPart } from "../../src/viewer/client/session-view.ts";
import { viewerClient } from "../../src/viewer/client/viewer-client.ts";
import { viewerPage } from "../../src/viewer/page.ts";
import { undeclaredNames } from "../support/free-names.ts";
import { inlineScript } from "../support/inline-script.ts";

const NONCE = "dGVzdC1ub25jZQ==";

/** A value of this module: a function that uses it is not self-contained. */
const OUTSIDE = "not in the browser";
function closesOver(): string {
  return OUTSIDE;
}

describe("the viewer's inline client script", () => {
  const script = inlineScript(viewerPage(NONCE, "1.2.3"), NONCE);

  it("is the page's one nonced script, carrying the entry and every part as its source", () => {
    assert.equal(script, CLIENT_SCRIPT);
    for (const part of [viewerClient, basicsPart, sessionListPart, sessionViewPart, restorePart, searchPart, liveRecordsPart, navigationPart]) {
      assert.ok(script.includes(part.toString()), `${part.name} is inlined`);
    }
  });

  it("is a classic script: it parses, with no import or require, and cannot end the <script> early", () => {
    assert.doesNotMatch(script, /\bimport\b|\brequire\b/);
    assert.doesNotMatch(script, /<\/script/i);
    assert.doesNotThrow(() => new Function(script), "the script parses");
  });

  it("uses no name that neither it nor the browser declares", () => {
    assert.deepEqual(undeclaredNames(script), []);
  });

  it("the check finds a name a function closed over from its module", () => {
    assert.deepEqual(undeclaredNames(`"use strict";(${closesOver.toString()})();`), ["OUTSIDE (line 2)"]);
  });
});
