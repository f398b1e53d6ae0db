// `sessiontap search QUERY [--session ID] [--regex] [--json]`: every matching message with its session, title, time and role, the match
// marked (in colour on a terminal, » « elsewhere); exit 1 when nothing matches, as grep does.
import type { Config } from "../config/parse.ts";
import { localDateTime } from "../utils/local-time.ts";
import { regexMatcher, search, type SearchHit, substringMatcher } from "../transcript/search.ts";
import { type SessionData, sessionIdOf, sessionTitle } from "../transcript/summary.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { type CommandIo, noMirror, notFound, useColor } from "./command-io.ts";
import { plural } from "../utils/plural.ts";
import { scrubLine, terminalSafeJson } from "../transcript/records.ts";

/** The snippet with its matches marked by `open`/`close`. */
function marked(hit: SearchHit, open: string, close: string): string {
  let out = "";
  let at = 0;
  for (const [a, b] of hit.marks) {
    out += hit.snippet.slice(at, a) + open + hit.snippet.slice(a, b) + close;
    at = b;
  }
  return out + hit.snippet.slice(at);
}

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const query = config.positional[0];
  const missing = await noMirror(config, io);
  if (missing !== null) return missing;
  const match = config.regex ? regexMatcher(query) : substringMatcher(query);
  const found = await withSessionSource(config, io.fs, async (source): Promise<SessionData[] | number> => {
    if (config.session === null) return await source.loadAll();
    const one = await source.lookup(config.session);
    return one.kind === "found" ? [one.data] : notFound(config, io, config.session, one);
  });
  if (typeof found === "number") return found;
  const hits = search(
    found.map((d) => ({ sessionId: sessionIdOf(d.dir, d.records), dir: d.dir, title: sessionTitle(d.side, d.records), records: d.records })),
    match,
  );
  const where = config.session === null ? `the ${plural(found.length, "session")} in ${sourceName(config)}` : `session ${config.session}`;
  if (config.json) io.stdout(terminalSafeJson(JSON.stringify(hits, null, 2)) + "\n");
  if (hits.length === 0) {
    io.stderr(`sessiontap: nothing matches ${config.regex ? "the regular expression " : ""}"${query}" in ${where}\n`);
    return 1;
  }
  if (config.json) return 0;
  const color = useColor(io);
  const paint = (code: string, text: string) => (color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const out: string[] = [];
  for (const hit of hits) {
    const time = hit.timestamp === null ? "-" : localDateTime(Date.parse(hit.timestamp), io.zone);
    const off = hit.offBranch ? `  ${paint("33", "(off the current branch: rewound or retried)")}` : "";
    out.push(`${paint("36", scrubLine(hit.sessionId ?? hit.dir))}  ${time}  ${paint("1", hit.role)}  ${hit.title ?? "(untitled)"}${off}`);
    out.push(`  ${color ? marked(hit, "\x1b[1;31m", "\x1b[0m") : marked(hit, "»", "«")}`);
  }
  const sessions = new Set(hits.map((h) => h.dir)).size;
  out.push(
    "",
    `${plural(hits.length, "message")} in ${plural(sessions, "session")} match${
      hits.length === 1 ? "es" : ""
    }. Open one: sessiontap show ID (or the viewer, /_tap/).`,
  );
  io.stdout(out.join("\n") + "\n");
  return 0;
}
