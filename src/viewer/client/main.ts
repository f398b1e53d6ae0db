/**
 * The browser client's entry: every part of the client handed to the one that assembles them
 * (viewer-client.ts). `bun build` bundles this module and what it imports into the page's one script
 * (../client-script.ts; docs/DESIGN.md "The viewer").
 */
import { liveRecordsPart } from "./live-records.ts";
import { navigationPart } from "./navigation.ts";
import { restorePart } from "./restore-panel.ts";
import { searchPart } from "./search.ts";
import { sessionListPart } from "./session-list.ts";
import { sessionViewPart } from "./session-view.ts";
import { viewerClient } from "./viewer-client.ts";

viewerClient({
  list: sessionListPart,
  session: sessionViewPart,
  restore: restorePart,
  search: searchPart,
  live: liveRecordsPart,
  navigation: navigationPart,
});
