// The command and settings tables, the one source of the usage lines, the parser's flags and defaults, and the help (docs/DESIGN.md "Command line").

/** Every setting: its flag, its environment variable, the default parse.ts takes, and what help says after it ("\n" continues a line). */
export const SETTINGS: [flag: string, env: string, fallback: string, note: string][] = [
  ["--port N", "SESSIONTAP_PORT", "8787", "(0 picks a free port)"],
  ["--host ADDR", "SESSIONTAP_HOST", "127.0.0.1", "(beyond loopback, /_tap/ needs a token)"],
  ["--token TOKEN", "SESSIONTAP_TOKEN", "", "none on loopback; beyond it, one generated and printed"],
  ["--upstream URL", "SESSIONTAP_UPSTREAM", "https://api.anthropic.com", ""],
  ["--mirror-dir DIR", "SESSIONTAP_MIRROR_DIR", "~/.claude/session-mirrors", ""],
  ["--no-mirror", "SESSIONTAP_MIRROR=on|off", "on", ""],
  ["", "SESSIONTAP_MAX_BYTES", "104857600", "(rotate the active file at 100 MiB)"],
  ["", "SESSIONTAP_RETENTION_DAYS", "0", "(off: the mirror keeps every session; N removes files\nolder than N days; keep N past Claude Code's cleanup)"],
  ["", "SESSIONTAP_MAX_SESSIONS", "1024", "(sessions kept in memory, LRU)"],
  ["", "SESSIONTAP_INCLUDE_THINKING", "true", "(false drops thinking blocks)"],
  ["", "SESSIONTAP_SIDE_REQUESTS", "on", "(off: side requests are not mirrored)"],
  ["", "SESSIONTAP_MAX_QUEUED", "1000", "(commits kept in memory while writes fail)"],
  ["", "SESSIONTAP_MAX_MESSAGE_BYTES", "33554432", "(an answer's bytes the mirror keeps; the rest\nis marked truncated; a larger request is not mirrored)"],
  ["", "SESSIONTAP_LOCK_WAIT_MS", "2000", "(longest wait for another tap's lock on a session)"],
  ["", "SESSIONTAP_DRAIN_MS", "10000", "(longest wait for in-flight streams on SIGTERM)"],
  ["--claude-dir DIR", "CLAUDE_CONFIG_DIR", "~/.claude", ""],
  ["", "SESSIONTAP_CLAUDE", "claude", "(on PATH): the Claude Code sessiontap claude and drill run"],
  ["", "SESSIONTAP_DRILL_TIMEOUT_MS", "120000", "(longest a drill's Claude Code may take to resume)"],
  ["", "SESSIONTAP_GUARD=on|off", "", "on when the Claude Code config dir exists: say at once\nwhen Claude Code loses the transcript of a mirrored session"],
  ["--store URL", "SESSIONTAP_STORE", "", "none (files only); postgres://… a shared store for teams:\nlist, show, export and restore read it when set"],
  ["--redact MODE", "SESSIONTAP_REDACT", "shared", "(secrets replaced in the store and in exports;\nall: in the tree too; off: nowhere)"],
  ["", "SESSIONTAP_STORE_ONLY", "false", "(true: the store only; the tree is its outage spool)"],
  ["", "SESSIONTAP_PRICES", "", "none (a JSON price file read over the built-in table:\nlist, show, usage, export and the viewer estimate costs)"],
  [
    "--proxy-port N",
    "SESSIONTAP_PROXY_PORT",
    "",
    "off (also a forward proxy for HTTPS_PROXY: decrypts the\nAPI hosts it knows, tunnels the rest; 0 picks a port)",
  ],
  ["", "SESSIONTAP_PROXY_HOSTS", "", "none (more host names it decrypts, spoken to as the API)"],
  ["", "SESSIONTAP_PROXY_UPSTREAM", "", "none (HOST=URL,...: send a known host's requests elsewhere)"],
  ["", "SESSIONTAP_PROXY_TUNNEL", "on", "(off: refuse every host it does not know)"],
  ["", "SESSIONTAP_PROXY_TIMEOUT_MS", "10000", "(longest wait for a CONNECT or a TLS handshake)"],
  ["", "SESSIONTAP_CA_DIR", "~/.config/sessiontap", "(its CA; NODE_EXTRA_CA_CERTS names\nca.pem there; $XDG_CONFIG_HOME/sessiontap when set)"],
];

export const DEFAULTS: Record<string, string> = Object.fromEntries(SETTINGS.map(([, env, fallback]) => [env.split("=")[0], fallback]));

function settingsHelp(): string {
  const row = ([flag, env, fallback, note]: (typeof SETTINGS)[number]) =>
    `  ${flag.padEnd(18)}  ${env.padEnd(28)} ${[fallback, note].filter(Boolean).join(" ")}`;
  return SETTINGS.map((s) => row(s).replaceAll("\n", `\n${" ".repeat(51)}`)).join("\n");
}

/** `value`: its value's name, null for a switch. */
type FlagHelp = { flag: string; value: string | null; help: string };
/** `args`: required positional arguments; `rest`: any number more ("[ARGS…]": claude's are passed on unparsed); `usageSuffix`: notes after the flags. */
type CommandSpec = { args?: string[]; about: string; flags: FlagHelp[]; rest?: string; usageSuffix?: string; exit: string };

const f = (flag: string, value: string | null, help: string): FlagHelp => ({ flag, value, help });
const byDefault = (env: string) => `${env}; default ${DEFAULTS[env]}`;
const mirrorDir = f("--mirror-dir", "DIR", `the mirror root (${byDefault("SESSIONTAP_MIRROR_DIR")})`);
const claudeDir = (why: string) => f("--claude-dir", "DIR", `Claude Code's config dir, ${why} (${byDefault("CLAUDE_CONFIG_DIR")})`);
const storeRead = f("--store", "URL", "read a shared PostgreSQL store instead of the tree (SESSIONTAP_STORE)");
const json = (what: string) => f("--json", null, `print ${what} as JSON`);
const since = (what: string) => f("--since", "DATE", `only ${what} from DATE on: YYYY-MM-DD, today, yesterday, or Nd (the last N days), in local time`);

const SPECS = {
  serve: {
    about: "Runs the tap: forwards every request to the upstream unchanged and mirrors each Claude Code conversation.",
    flags: [
      f("--port", "N", `port to listen on (${byDefault("SESSIONTAP_PORT")}; 0 picks a free port and prints it)`),
      f("--host", "ADDR", `address to listen on (${byDefault("SESSIONTAP_HOST")}); beyond loopback, /_tap/ needs a token`),
      f(
        "--token",
        "TOKEN",
        "the token /_tap/ requires, 16+ characters, not guessable (SESSIONTAP_TOKEN); on loopback none is needed unless one is given; " +
          "beyond loopback without one, a token is generated and printed at start",
      ),
      f("--upstream", "URL", `where requests go (${byDefault("SESSIONTAP_UPSTREAM")})`),
      mirrorDir,
      f("--no-mirror", null, "forward only; write nothing at all (SESSIONTAP_MIRROR=off)"),
      claudeDir("whose transcripts the guard watches and the viewer checks"),
      f("--store", "URL", "also write every commit to a shared PostgreSQL store (SESSIONTAP_STORE)"),
      f("--proxy-port", "N", "also answer as a forward proxy (HTTPS_PROXY) on port N (SESSIONTAP_PROXY_PORT; default off; 0 picks a free port)"),
      f("--redact", "shared|all|off", "where secrets are replaced: shared (default) the store and exports, all the tree too, off nowhere (SESSIONTAP_REDACT)"),
    ],
    exit:
      "0 stopped by SIGINT/SIGTERM with everything written; 1 stopped with commits that could be saved nowhere; 2 a bad setting, an unusable mirror root, or the port is taken.",
  },
  claude: {
    rest: "[ARGS…]",
    about: "Runs Claude Code (claude on PATH, or SESSIONTAP_CLAUDE) with ARGS through the tap: the tap already serving on the port " +
      "(SESSIONTAP_PORT), else one started for as long as Claude Code runs. ANTHROPIC_BASE_URL is set for Claude Code alone. " +
      "Every argument after `claude` is Claude Code's; the tap's settings come from the environment (sessiontap --help).",
    flags: [],
    usageSuffix: "Claude Code's own help: claude --help. Without the tap: run claude itself, with ANTHROPIC_BASE_URL unset.",
    exit: "Claude Code's own exit status (128 + N when signal N ended it); 127 it was not found, 126 it could not be started; " +
      "1 no tap could be started (Claude Code was not run), or the mirror could not be saved; 2 a bad setting.",
  },
  list: {
    about:
      "Lists every mirrored session, most recent first: its title, project, tokens and estimated cost, and the state of Claude Code's own transcript of it.",
    flags: [mirrorDir, claudeDir("whose transcripts are checked"), storeRead, since("sessions active"), json("an array of sessions")],
    exit: "0 listed (none is fine); 1 there is no mirror at that root, or the price file is unusable; 2 a usage error.",
  },
  show: {
    args: ["SESSION"],
    about: "Shows one session's facts and its conversation as plain text for a terminal (SESSION: an id or a unique prefix).",
    flags: [
      mirrorDir,
      claudeDir("whose transcript is checked"),
      storeRead,
      f("--full", null, "show everything: Claude Code's injected context, tool inputs and results, thinking"),
      json("the facts and the records in reading order"),
    ],
    exit: "0 shown; 1 no mirror, or no single session matches; 2 a usage error.",
  },
  search: {
    args: ["QUERY"],
    about: "Finds every message that contains QUERY (case-insensitive), across sessions or in one: session, title, time, role, and the text around each match.",
    flags: [
      mirrorDir,
      storeRead,
      f("--session", "ID", "search this session only (an id or a unique prefix)"),
      f("--regex", null, "QUERY is a regular expression (JavaScript syntax, case-insensitive)"),
      json("the matches"),
    ],
    exit: "0 something matched; 1 nothing matched, there is no mirror, or no single session matches --session; 2 a usage error.",
  },
  usage: {
    about: "Sums the tokens of every recorded answer, with an estimated cost, per day, per project and per model, across sessions.",
    flags: [mirrorDir, storeRead, since("answers"), json("the sums")],
    usageSuffix: "Costs come from the price table in sessiontap (the date it was checked is printed); SESSIONTAP_PRICES=FILE.json corrects or extends it.",
    exit: "0 summed (nothing recorded is fine); 1 there is no mirror, or the price file is unusable; 2 a usage error.",
  },
  export: {
    args: ["SESSION"],
    about: "Writes one session's conversation as Markdown, a standalone HTML page, or its raw JSONL records.",
    flags: [
      mirrorDir,
      storeRead,
      f("--format", "md|html|jsonl", "what to write (default md)"),
      f("--out", "FILE", "write to FILE (replaced atomically, 0600) instead of standard output"),
      f("--no-redact", null, "keep secrets as they are (by default each is replaced by [REDACTED <kind> <fingerprint>])"),
    ],
    exit: "0 written in full; 1 no single session matches, or the output could not be written whole; 2 a usage error.",
  },
  restore: {
    args: ["SESSION"],
    about: "Puts a session back where `claude --resume SESSION` finds it, from the mirror.",
    flags: [
      mirrorDir,
      claudeDir("where the transcript is written"),
      storeRead,
      f("--cwd", "DIR", "the working directory the session belongs to (default: the one the mirror recorded)"),
      f("--dry-run", null, "say what would be written, write nothing"),
      f("--force", null, "replace a transcript that has content (a backup is kept beside it)"),
      json("what was (or would be) done"),
    ],
    exit: "0 restored (or would be); 1 refused (a transcript with content is there), nothing matches, or the write failed; 2 a usage error.",
  },
  verify: {
    about: "Checks every session of the mirror tree: identity, torn lines, duplicates, chains, modes, links.",
    flags: [mirrorDir, f("--repair", null, "move damaged lines and duplicates aside and fix modes (never loses a byte)"), json("one report per session")],
    exit: "0 no damage; 1 damage remains, or there is no mirror at that root; 2 a usage error.",
  },
  doctor: {
    about:
      "Checks what makes a conversation go unmirrored or lost: the mirror root, the tap Claude Code uses, the upstream, Claude Code's settings and transcripts.",
    flags: [
      mirrorDir,
      claudeDir("whose settings and transcripts are checked"),
      f("--cwd", "DIR", "the project whose .claude/settings*.json Claude Code reads (default: the current directory)"),
      f("--url", "URL", "the tap to check (default: the ANTHROPIC_BASE_URL Claude Code uses, else http://127.0.0.1:8787)"),
      f("--port", "N", "the tap to check is http://127.0.0.1:N"),
      json("the checks"),
    ],
    usageSuffix: "--url and --port name the same thing: give one.",
    exit: "0 no problem (warnings allowed); 1 at least one problem; 2 a usage error.",
  },
  drill: {
    rest: "[SESSION…]",
    about: "Proves each backed-up session resumes: writes it as restore would into a scratch Claude Code config, runs your Claude Code " +
      "(claude on PATH, or SESSIONTAP_CLAUDE) as claude -p --resume against an answerer inside sessiontap (nothing leaves the machine, no token is " +
      "spent), and compares what it sends with the mirror. SESSION: an id or a unique prefix; none: every session.",
    flags: [mirrorDir, storeRead, f("--jobs", "N", "drill N sessions at once (default: the cores, at most 4)"), json("an array of {sessionId, ok, detail, …}")],
    usageSuffix:
      `Each Claude Code is stopped after SESSIONTAP_DRILL_TIMEOUT_MS (default ${DEFAULTS.SESSIONTAP_DRILL_TIMEOUT_MS}). Run it after upgrading Claude Code.`,
    exit: "0 every session drilled resumed whole; 1 any did not, or Claude Code could not be started; 2 a usage error, or a SESSION that matches none.",
  },
  mcp: {
    about: "Answers Claude Code as an MCP server on stdio: its tools search_sessions, read_session and list_sessions search and read every mirrored " +
      "session, those whose Claude Code transcript is gone or cut and the text from before a compaction included. It only reads (the shared store too, " +
      "when SESSIONTAP_STORE names one). Add it to Claude Code for every project with:\n\n  claude mcp add -s user sessiontap -- sessiontap mcp\n\n" +
      "(without -s user, for the current directory only).",
    flags: [mirrorDir],
    usageSuffix: "Claude Code starts and stops it; run by hand, it waits for a client on stdin and ends when stdin closes.",
    exit: "0 stdin closed or stopped by SIGINT/SIGTERM; 2 a usage error.",
  },
  scan: {
    rest: "[SESSION…]",
    about: "Finds secrets (API keys, tokens, private keys) in the mirror and in Claude Code's own transcripts (<claude-dir>/projects/**/*.jsonl): " +
      "one line per finding with its kind, session, file and line, and at most its first four characters. It only reads. SESSION: an id or a " +
      "unique prefix; none: every session.",
    flags: [mirrorDir, claudeDir("whose transcripts are scanned"), json("an array of {kind, sessionId, file, source, line, preview}")],
    exit: "0 nothing found; 1 a secret was found, or a file could not be read; 2 a usage error, or a SESSION that matches none.",
  },
  store: {
    args: ["migrate"],
    about: "`store migrate`: creates the shared PostgreSQL store's schema or brings it up to date.",
    flags: [f("--store", "URL", "the store, postgres://… (SESSIONTAP_STORE)")],
    exit: "0 the schema is current; 1 the store cannot be reached or refused; 2 a usage error.",
  },
} satisfies Record<string, CommandSpec>;

export type Command = keyof typeof SPECS;
export const COMMAND_SPECS: Record<Command, CommandSpec> = SPECS;
export const COMMANDS = Object.keys(SPECS) as Command[];

const flagText = (x: FlagHelp) => `${x.flag}${x.value === null ? "" : ` ${x.value}`}`;

export function usageLine(command: Command): string {
  const { args = [], flags, rest } = COMMAND_SPECS[command];
  return ["sessiontap", command === "serve" ? "[serve]" : command, ...args, ...(rest ? [rest] : []), ...flags.map((x) => `[${flagText(x)}]`)].join(" ");
}

export function commandHelp(command: Command): string {
  const spec = COMMAND_SPECS[command];
  const rows = [...spec.flags.map((x) => [flagText(x), x.help]), ["-h, --help", "print this help"]];
  const width = Math.max(...rows.map(([k]) => k.length));
  const options = rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}\n`).join("");
  const suffix = spec.usageSuffix ? `\n${spec.usageSuffix}\n` : "";
  return `Usage: ${usageLine(command)}\n\n${spec.about}\n\nOptions:\n${options}${suffix}\nExit status: ${spec.exit}\n`;
}

export const HELP = `sessiontap — a transparent tap for the Anthropic Messages API that mirrors every
Claude Code conversation to per-session JSONL files.

Usage:
${COMMANDS.map((c) => `  ${usageLine(c)}`).join("\n")}
  sessiontap CMD --help | --help | --version

Run Claude Code through it: sessiontap claude [ARGS…]; or start the tap, then point Claude Code at it:
  export ANTHROPIC_BASE_URL=http://127.0.0.1:8787
and read the mirrored sessions, live, at http://127.0.0.1:8787/_tap/ while it runs.
What did it cost? sessiontap usage --since yesterday; find a message: sessiontap search WORDS.
Lost a session? sessiontap list, then sessiontap restore ID, then claude --resume ID.
Will each one resume in your Claude Code? sessiontap drill, after every upgrade of it.
Let Claude Code look its own history up, lost parts included: claude mcp add -s user sessiontap -- sessiontap mcp
Is it working? sessiontap doctor. With the tap stopped, Claude Code's requests fail (after ~3 minutes
of retries): start it again, or go around it: unset ANTHROPIC_BASE_URL.

Settings (flag, then environment, then default):
${settingsHelp()}

Exit status: 0 success, 1 the command found a problem, 2 a usage error. sessiontap CMD --help says more.

The rest is in the README and docs/: docs/commands.md (every command), docs/settings.md, docs/recovery.md
(restore, the guard, doctor), docs/teams.md (the shared store), docs/providers.md (providers and proxy
mode), docs/service.md (running as a service), docs/mirror.md (the mirror's files), docs/failures.md
(health and every error line), docs/releases.md (binaries, npm, platforms), docs/development.md.
`;
