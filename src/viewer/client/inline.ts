/**
 * The browser client as the text of the page's one inline script (docs/DESIGN.md "The viewer"): the
 * page runs only its nonced script, so the client is written as typed functions and served as their
 * source. `Function.prototype.toString()` gives each function's JavaScript as the running code has it
 * (transpiled by Bun or Deno, minified in the compiled binary), and that text is all the browser gets: a
 * part may use only what is inside its own body, browser globals, and what it is handed at run time. So
 * the entry receives every part (each as its source) as an argument and hands each part the whole
 * client, and parts call one another through that object, never by a name from their module. Types cost
 * nothing at run time and can live anywhere (viewer-app.ts, ../api-json.ts).
 * test/viewer/client-script.test.ts checks the text names nothing the browser lacks.
 */
import { basicsPart } from "./basics.ts";
import { liveRecordsPart } from "./live-records.ts";
import { navigationPart } from "./navigation.ts";
import { restorePart } from "./restore-panel.ts";
import { searchPart } from "./search.ts";
import { sessionListPart } from "./session-list.ts";
import { sessionViewPart } from "./session-view.ts";
import type { ClientParts } from "./viewer-app.ts";
import { viewerClient } from "./viewer-client.ts";

const PARTS = {
  basics: basicsPart,
  list: sessionListPart,
  session: sessionViewPart,
  restore: restorePart,
  search: searchPart,
  live: liveRecordsPart,
  navigation: navigationPart,
} satisfies ClientParts;

/** The script: the entry called with every part, each as its own source. */
export const CLIENT_SCRIPT = `"use strict";\n(${viewerClient.toString()})({\n${
  Object.entries(PARTS).map(([name, part]) => `${name}: ${part.toString()}`).join(",\n")
}\n});\n`;
