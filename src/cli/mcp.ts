// `sessiontap mcp`: a Model Context Protocol server on stdio through which Claude Code searches and reads the mirror, what it lost included
// (docs/DESIGN.md "The MCP server"). It only reads; stdout carries protocol messages alone; it ends when stdin closes, or on SIGINT/SIGTERM.
import process from "node:process";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { CallToolRequestSchema, type CallToolResult, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { type Config, settingName } from "../config/parse.ts";
import { scanTranscripts, type TranscriptInfo } from "../storage/claude-projects.ts";
import { type ListEntry, MirrorReader, SessionCatalog, type SessionSource } from "../storage/mirror-reader.ts";
import { sourceName, withSessionSource } from "../store/pg-reader.ts";
import { scrubLine, uuidOf } from "../transcript/records.ts";
import { PLAIN, renderText } from "../transcript/render.ts";
import { search, type SearchHit, termsMatcher } from "../transcript/search.ts";
import { countsText } from "../transcript/summary.ts";
import { stateWords } from "../transcript/transcript-state.ts";
import { buildTree, currentBranch, outline } from "../transcript/tree.ts";
import { loadPrices } from "../usage/prices.ts";
import { usd } from "../usage/tokens.ts";
import { describe, plural } from "../utils/describe-error.ts";
import { localDateTime, offsetLabel } from "../utils/local-time.ts";
import { VERSION } from "../version.ts";
import { type CommandIo, notMatched } from "./command-io.ts";

/** Characters of one answer at most: Claude Code hands a tool's result to the model whole only up to 50,000 (beyond, a 2 KB preview). */
export const MAX_TEXT = 45_000;

/** Bad input or nothing to find: said to the model as a tool error, not logged. */
class ToolError extends Error {}

type Param = { type: "string" | "integer"; description: string; maxLength?: number; minimum?: number; maximum?: number };
type Args = Record<string, string | number | undefined>;
interface Tool {
  name: "search_sessions" | "read_session" | "list_sessions";
  description: string;
  params: Record<string, Param>;
  required: string[];
}

const text = (description: string, maxLength: number): Param => ({ type: "string", description, maxLength });
const whole = (description: string, minimum: number, maximum: number): Param => ({ type: "integer", description, minimum, maximum });
const project = text("Only sessions whose project directory contains this (a path or part of one, any case).", 4096);

const TOOLS: Tool[] = [
  {
    name: "search_sessions",
    description: "Searches every Claude Code conversation sessiontap mirrored, including sessions whose transcript Claude Code deleted or cut, text " +
      "from before a compaction, and branches the conversation left (rewound or retried). Each match, newest first: its session id, time, project, " +
      'title, the state of Claude Code\'s own transcript, and a snippet. Every word of the query must appear in a message (any case; "a phrase" is one word).',
    params: { query: text("Words to find.", 500), project, limit: whole("Most matches to return (default 20).", 1, 50) },
    required: ["query"],
  },
  {
    name: "read_session",
    description: "Reads one mirrored session as text: prompts, answers, tool calls with the start of their results, compactions and other branches " +
      `marked. Long sessions come in parts of at most ${MAX_TEXT} characters; each part says the offset that gives the next.`,
    params: {
      session: text("The session id, or a unique prefix of it.", 200),
      offset: whole("Where to start, in characters of the session's text (default 0; each part names the next).", 0, Number.MAX_SAFE_INTEGER),
      limit: whole(`Most characters of the session's text in this part (default and most ${MAX_TEXT}).`, 1000, MAX_TEXT),
    },
    required: ["session"],
  },
  {
    name: "list_sessions",
    description: "Lists mirrored Claude Code sessions, most recent first: id, title, project, time, prompts and answers, cost, and whether Claude " +
      "Code's own transcript is intact, behind, a stub or missing (then the mirror is where the conversation is left).",
    params: { project, limit: whole("Most sessions to return (default 20).", 1, 100) },
    required: [],
  },
];

/** The arguments checked against the tool's own schema, in words a model can act on. */
function argumentsOf(tool: Tool, raw: Record<string, unknown>): Args {
  const names = Object.keys(tool.params);
  for (const key of Object.keys(raw)) if (!names.includes(key)) throw new ToolError(`${tool.name} takes no "${key}"; it takes ${names.join(", ")}`);
  const out: Args = {};
  for (const [key, p] of Object.entries(tool.params)) {
    const v = raw[key];
    if (v === undefined || v === null) {
      if (tool.required.includes(key)) throw new ToolError(`${tool.name} needs "${key}"`);
    } else if (p.type === "string") {
      if (typeof v !== "string") throw new ToolError(`"${key}" must be a string, got ${JSON.stringify(v).slice(0, 100)}`);
      if (v.trim() === "") throw new ToolError(`"${key}" is empty`);
      if (v.length > p.maxLength!) throw new ToolError(`"${key}" is too long: ${v.length} characters, at most ${p.maxLength}`);
      out[key] = v.trim();
    } else if (typeof v !== "number" || !Number.isInteger(v) || v < p.minimum! || v > p.maximum!) {
      throw new ToolError(`"${key}" must be a whole number from ${p.minimum} to ${p.maximum}, got ${JSON.stringify(v).slice(0, 100)}`);
    } else out[key] = v;
  }
  return out;
}

type Judged = { entry: ListEntry; info: TranscriptInfo };

export async function run(config: Readonly<Config>, io: CommandIo): Promise<number> {
  const reader = new MirrorReader(io.fs, config.mirrorDir); // kept between calls: it parses again only the files that changed
  const when = (iso: string | null) => (iso === null ? "?" : localDateTime(Date.parse(iso), io.zone));
  const zone = `times ${offsetLabel(io.clock(), io.zone)}`;

  /** Runs `fn` on the sessions and their catalog: the store's when one is configured, else the tree's. */
  async function reading<T>(fn: (catalog: SessionCatalog, source: SessionSource) => Promise<T>): Promise<T> {
    if (config.store === null && !(await io.fs.lstat(config.mirrorDir))?.isDirectory) {
      throw new ToolError(`there is no mirror at ${config.mirrorDir} (${settingName(config, "mirrorDir")}): nothing was mirrored there`);
    }
    const prices = await loadPrices(io.fs, config.prices);
    const use = (source: SessionSource) => fn(new SessionCatalog(io.fs, config.mirrorDir, config.claudeDir, source, prices, io.clock), source);
    return config.store === null ? await use(reader) : await withSessionSource(config, io.fs, use);
  }

  const idOf = (e: ListEntry) => scrubLine(e.sessionId ?? e.dir);
  /** Claude Code's own transcript of the session, as the one judge says, and what to do when it is not whole. */
  function transcriptWords({ entry, info }: Judged): string {
    if (info.problem !== null) return `none (${info.problem})`;
    if (info.warning !== null) return `not read (${scrubLine(info.warning)})`;
    if (info.state === "intact") return "intact";
    return `${stateWords(info.verdict)}; the mirror has it whole (sessiontap restore ${idOf(entry)} puts it back for claude --resume)`;
  }
  const facts = (j: Judged) =>
    `${idOf(j.entry)} · ${when(j.entry.lastTimestamp)} · ${j.entry.cwd === null ? "project unknown" : scrubLine(j.entry.cwd)}\n` +
    `  ${j.entry.title ?? "(untitled)"} · ${countsText(j.entry.counts)} · ${usd(j.entry.costUSD)} · Claude Code's transcript: ${transcriptWords(j)}`;
  const within = (a: Args) => (a.project === undefined ? "" : ` in projects containing "${a.project}"`);
  const inProject = (e: ListEntry, p: string | number | undefined) => p === undefined || (e.cwd ?? "").toLowerCase().includes(String(p).toLowerCase());

  /** The first `limit` items in order while they fit in MAX_TEXT with `head`, then how many were left out and why. */
  function fit<T>(head: string, all: T[], limit: Args[string], show: (item: T) => string, how: string): string {
    let out = head;
    let shown = 0;
    for (const item of all.slice(0, Number(limit ?? 20)).map(show)) {
      if (out.length + item.length + 200 > MAX_TEXT) break;
      out += `\n\n${item}`;
      shown++;
    }
    return shown < all.length ? `${out}\n\n(${all.length - shown} more not shown: ${how})` : out;
  }

  const handlers: Record<Tool["name"], (a: Args) => Promise<string>> = {
    list_sessions: (a) =>
      reading(async (catalog) => {
        const all = (await catalog.judged()).filter((j) => inProject(j.entry, a.project));
        if (all.length === 0) return a.project === undefined ? "No mirrored sessions yet." : `No mirrored session's project contains "${a.project}".`;
        const head = `${plural(all.length, "mirrored session")}${within(a)}, most recent first (${zone}):`;
        return fit(head, all, a.limit, facts, "ask with a larger limit, or a project");
      }),

    search_sessions: (a) =>
      reading(async (catalog, source) => {
        const query = String(a.query);
        const sessions = await source.loadAll();
        const match = termsMatcher(query)!; // a query that is not blank has a word
        const hits = search(sessions, match);
        const scan = await scanTranscripts(io.fs, config.claudeDir);
        const found = new Map<string, { judged: Judged; current: Set<string> }>();
        const hit = new Set(hits.map((h) => h.dir));
        for (const d of sessions.filter((d) => hit.has(d.dir))) {
          const judged = await catalog.judge(d, scan);
          if (inProject(judged.entry, a.project)) found.set(d.dir, { judged, current: new Set(currentBranch(buildTree(d.records)).map((r) => uuidOf(r)!)) });
        }
        const matches = hits.filter((h) => found.has(h.dir)).sort((x, y) => (y.timestamp ?? "").localeCompare(x.timestamp ?? ""));
        if (matches.length === 0) return `Nothing matches "${query}"${within(a)} in ${plural(sessions.length, "mirrored session")}.`;
        const item = (h: SearchHit) => {
          const { judged, current } = found.get(h.dir)!;
          const part = h.offBranch
            ? " · on a branch the conversation left (rewound or retried)"
            : current.has(h.uuid)
            ? ""
            : " · from before a compaction (no longer in that conversation's context)";
          return `${facts(judged)}\n  ${h.role} at ${when(h.timestamp)}${part}:\n  ${h.snippet}`;
        };
        const head = `${plural(matches.length, "message")} in ${plural(found.size, "session")} match "${query}"${within(a)}, newest first (${zone}). ` +
          "read_session with a session id gives the whole conversation.";
        return fit(head, matches, a.limit, item, "ask with a larger limit, more words, or a project");
      }),

    read_session: (a) =>
      reading(async (catalog, source) => {
        const asked = String(a.session);
        const found = await source.lookup(asked);
        if (found.kind !== "found") throw new ToolError(notMatched(asked, found, "(list_sessions and search_sessions give the ids)"));
        const judged = await catalog.judge(found.data);
        // The CLI's renderer, less its hints about a flag a model cannot give.
        const body = renderText(outline(buildTree(found.data.records)), { full: false, style: PLAIN, zone: io.zone, prices: catalog.prices })
          .replaceAll(" (--full shows them)", "").replaceAll(" (--full shows the whole summary)", "");
        const offset = Number(a.offset ?? 0);
        if (offset > 0 && offset >= body.length) throw new ToolError(`offset ${offset} is past the end: the session's text is ${body.length} characters`);
        const limit = Number(a.limit ?? MAX_TEXT);
        let end = Math.min(body.length, offset + limit);
        if (end < body.length) {
          const line = body.lastIndexOf("\n", end - 1) + 1; // end a part at a line's end where one is near
          if (line > offset + limit / 2) end = line;
          else if (/[\ud800-\udbff]/.test(body[end - 1])) end--; // never between the halves of a character
        }
        const id = idOf(judged.entry);
        const head =
          `Session ${id} · ${judged.entry.cwd === null ? "project unknown" : scrubLine(judged.entry.cwd)} · ${judged.entry.title ?? "(untitled)"}\n` +
          `${when(judged.entry.firstTimestamp)} – ${when(judged.entry.lastTimestamp)} (${zone}) · ${countsText(judged.entry.counts)} · ` +
          `Claude Code's transcript: ${transcriptWords(judged)}\nCharacters ${offset}–${end} of ${body.length}:`;
        const next = { session: id, offset: end, ...(a.limit === undefined ? {} : { limit }) };
        const tail = end < body.length
          ? `[${body.length - end} more characters: call read_session with ${JSON.stringify(next)} for the next part]`
          : "[end of the session]";
        return `${head}\n\n${body.slice(offset, end)}${body.slice(offset, end).endsWith("\n") ? "" : "\n"}${tail}`;
      }),
  };

  const server = new Server({ name: "sessiontap", version: VERSION }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: TOOLS.map((t) => ({
      name: t.name,
      description: t.description,
      inputSchema: { type: "object" as const, properties: t.params, required: t.required, additionalProperties: false },
    })),
  }));
  const calls = new Set<Promise<CallToolResult>>();
  server.setRequestHandler(CallToolRequestSchema, ({ params }) => {
    const call = answer(params.name, params.arguments ?? {});
    calls.add(call);
    return call.finally(() => calls.delete(call));
  });
  async function answer(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    try {
      const tool = TOOLS.find((t) => t.name === name);
      if (tool === undefined) throw new ToolError(`there is no tool "${name}"; there are ${TOOLS.map((t) => t.name).join(", ")}`);
      return { content: [{ type: "text", text: await handlers[tool.name](argumentsOf(tool, args)) }] };
    } catch (error) {
      const message = error instanceof ToolError ? error.message : `${name} failed: ${describe(error)}`;
      if (!(error instanceof ToolError)) io.stderr(`sessiontap mcp: ${message}\n`);
      return { content: [{ type: "text", text: message }], isError: true };
    }
  }

  const transport = new StdioServerTransport();
  const stopped = new Promise<void>((stop) => {
    transport.onclose = stop;
    process.stdin.once("end", stop).once("close", stop); // the transport itself does not notice its client leaving
    void io.stopSignal.then(() => stop());
  });
  try {
    await server.connect(transport);
    io.stderr(`sessiontap mcp: serving ${sourceName(config)} on stdio, read-only\n`);
    await stopped;
    // A client may close stdin right behind its last call: each call still gets its answer, which the SDK writes a few
    // promise steps after the call returns (a turn of the event loop), and that write is flushed before the process exits.
    await Promise.allSettled(calls);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => process.stdout.write("", resolve));
  } finally {
    await server.close();
  }
  return 0;
}
