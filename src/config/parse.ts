// Settings from flags, then environment, then defaults (docs/DESIGN.md "Command line"): (argv, env, home) → a
// frozen Config, or a UsageError naming the one setting or flag that is wrong. Pure.
import { parseArgs } from "node:util";
import { type Command, COMMAND_SPECS, COMMANDS, flagsOf } from "./commands.ts";
import { proxySettings } from "./proxy-settings.ts";
import { type Env, expandHome, httpUrl, integer, onOff, pick, sinceDate, storeUrl, tokenValue, upstreamUrl, UsageError } from "./values.ts";

export { type Command, COMMANDS, UsageError };
export type SettingSource = "flag" | "env" | "default";
export type Config = ReturnType<typeof resolve>;
type Flags = Map<string, string | true>;

const OPTIONS = Object.fromEntries([
  ...Object.values(COMMAND_SPECS).flatMap((spec) => spec.flags).map((x) => [x.flag.slice(2), { type: x.value === null ? "boolean" : "string" }] as const),
  ["help", { type: "boolean", short: "h" }],
  ["version", { type: "boolean", short: "V" }],
]);

/** The known option nearest a mistyped one (at most two edits), for "did you mean". */
function nearest(name: string): string | null {
  let best: [number, string] | null = null;
  for (const known of Object.keys(OPTIONS)) {
    let row = Array.from({ length: known.length + 1 }, (_, j) => j);
    for (let i = 1; i <= name.length; i++) {
      const next = [i];
      for (let j = 1; j <= known.length; j++) next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (name[i - 1] === known[j - 1] ? 0 : 1));
      row = next;
    }
    const d = row[known.length];
    if (d <= 2 && d < name.length && (best === null || d < best[0])) best = [d, known];
  }
  return best?.[1] ?? null;
}

/** argv as command, positional arguments and flags by long name; everything after `--` is positional. */
export function splitArgs(argv: string[]): { command: string | null; positional: string[]; flags: Flags } {
  // Not strict: parseArgs' own errors differ between runtimes, so each token is checked here, in our words.
  const { tokens } = parseArgs({ args: argv, options: OPTIONS, strict: false, allowPositionals: true, tokens: true });
  const flags: Flags = new Map();
  const positional: string[] = [];
  for (const token of tokens) {
    if (token.kind === "positional") positional.push(token.value);
    if (token.kind !== "option") continue;
    const type = Object.hasOwn(OPTIONS, token.name) ? OPTIONS[token.name].type : undefined;
    if (type === undefined) {
      const near = nearest(token.name);
      throw new UsageError(`unknown option ${token.rawName}${near === null ? "" : `; did you mean --${near}?`} (see sessiontap --help)`);
    }
    if (type === "string" && token.value === undefined) throw new UsageError(`${token.rawName} needs a value`);
    if (type === "boolean" && token.value !== undefined) throw new UsageError(`${token.rawName} takes no value (see sessiontap --help)`);
    flags.set(`--${token.name}`, token.value ?? true);
  }
  return { command: positional.shift() ?? null, positional, flags };
}

/** Flags and arguments against the command's usage line. */
function checkUsage(command: Command, positional: string[], flags: Flags): void {
  const allowed = flagsOf(command);
  for (const name of flags.keys()) if (!allowed.has(name)) throw new UsageError(`${command} does not take ${name} (see sessiontap ${command} --help)`);
  if (flags.has("--url") && flags.has("--port")) throw new UsageError(`doctor takes --url or --port, not both (see sessiontap doctor --help)`);
  const wanted = COMMAND_SPECS[command].args;
  if (positional.length > wanted.length && COMMAND_SPECS[command].rest === undefined) {
    const extra = positional.slice(wanted.length).map((a) => `"${a}"`).join(" ");
    throw new UsageError(`${command} takes ${wanted.length === 0 ? "no arguments" : wanted.join(" ")}, got ${extra} too (see sessiontap ${command} --help)`);
  }
  if (positional.length < wanted.length || positional.some((a) => a === "")) {
    const what = wanted[positional.length] ?? wanted[0];
    throw new UsageError(
      what === "SESSION"
        ? `${command} needs a SESSION (an id or a unique prefix; see sessiontap list)`
        : `${command} needs ${what} (see sessiontap ${command} --help)`,
    );
  }
}

export function parseConfig(argv: string[], env: Env, home: string): Readonly<Config> {
  const { command: named, positional, flags } = splitArgs(argv);
  const isCommand = (name: string | null | undefined): name is Command => (COMMANDS as readonly (string | null | undefined)[]).includes(name);
  const about = positional[0];
  if (named === "help" && about !== undefined && !isCommand(about)) throw new UsageError(`unknown command "${about}" (see sessiontap --help)`);
  if (named === "help") return helpConfig(isCommand(about) ? about : null);
  if (named !== null && !isCommand(named)) throw new UsageError(`unknown command "${named}" (see sessiontap --help)`);
  if (flags.has("--help")) return helpConfig(named);
  checkUsage(named ?? "serve", positional, flags);
  return Object.freeze(resolve(flags.has("--version") ? "version" : named ?? "serve", positional, flags, env, home));
}

/** A help request reads nothing else, so `--help` works whatever the environment says. */
function helpConfig(helpFor: Command | null): Readonly<Config> {
  return Object.freeze({ ...resolve("help", [], new Map(), {}, "/"), helpFor });
}

function resolve(command: Command | "help" | "version", positional: string[], flags: Flags, env: Env, home: string) {
  const str = (flag: string) => (typeof flags.get(flag) === "string" ? flags.get(flag) as string : null);
  const source = (flag: string, envName: string): SettingSource => (str(flag) !== null ? "flag" : env[envName] ? "env" : "default");
  const num = (name: string, fallback: string, min: number, max: number) => integer(name, env[name] || fallback, min, max);
  const toggle = (name: string, yes: string, no: string, fallback: boolean) => (env[name] ? onOff(name, env[name]!, [yes], [no]) : fallback);
  const host = pick(flags, "--host", env, "SESSIONTAP_HOST") ?? "127.0.0.1";
  const format = str("--format") ?? "md";
  const url = str("--url");
  const since = str("--since");
  const store = pick(flags, "--store", env, "SESSIONTAP_STORE");
  const token = pick(flags, "--token", env, "SESSIONTAP_TOKEN");
  const redact = (pick(flags, "--redact", env, "SESSIONTAP_REDACT") ?? "shared").trim().toLowerCase();
  if (redact !== "shared" && redact !== "all" && redact !== "off") {
    throw new UsageError(`redaction (--redact / SESSIONTAP_REDACT) must be shared, all or off, got "${redact}"`);
  }
  if (!/^[A-Za-z0-9.:\-\[\]%]+$/.test(host)) throw new UsageError(`host (--host / SESSIONTAP_HOST) is not an address: "${host}"`);
  if (format !== "md" && format !== "html" && format !== "jsonl") throw new UsageError(`--format must be md, html or jsonl, got "${format}"`);
  if (url !== null) httpUrl("--url", url);
  if (flags.has("--regex") && command === "search") {
    try {
      new RegExp(positional[0], "iu");
    } catch (error) {
      const why = (error as Error).message.replace(/^Invalid regular expression: /, "");
      throw new UsageError(`search --regex: "${positional[0]}" is not a regular expression (${why})`);
    }
  }
  return {
    command,
    helpFor: null as Command | null,
    positional,
    port: integer("port (--port / SESSIONTAP_PORT)", pick(flags, "--port", env, "SESSIONTAP_PORT") ?? "8787", 0, 65535),
    host,
    upstream: upstreamUrl(pick(flags, "--upstream", env, "SESSIONTAP_UPSTREAM") ?? "https://api.anthropic.com"),
    mirrorDir: expandHome(pick(flags, "--mirror-dir", env, "SESSIONTAP_MIRROR_DIR") ?? "~/.claude/session-mirrors", home),
    mirror: toggle("SESSIONTAP_MIRROR", "on", "off", true) && !flags.has("--no-mirror"),
    maxBytes: num("SESSIONTAP_MAX_BYTES", "104857600", 1024, Number.MAX_SAFE_INTEGER),
    // Off by default: the mirror is the backup of transcripts Claude Code deletes at 30 days (docs/DESIGN.md "Retention").
    retentionDays: num("SESSIONTAP_RETENTION_DAYS", "0", 0, 36500),
    maxSessions: num("SESSIONTAP_MAX_SESSIONS", "1024", 1, 10_000_000),
    includeThinking: toggle("SESSIONTAP_INCLUDE_THINKING", "true", "false", true),
    sideRequests: toggle("SESSIONTAP_SIDE_REQUESTS", "on", "off", true),
    claudeDir: expandHome(pick(flags, "--claude-dir", env, "CLAUDE_CONFIG_DIR") ?? "~/.claude", home),
    // null: unset, which is on when the Claude Code config dir exists.
    guard: env.SESSIONTAP_GUARD ? onOff("SESSIONTAP_GUARD", env.SESSIONTAP_GUARD, ["on"], ["off"]) : null,
    store: store === undefined ? null : storeUrl(store),
    storeOnly: toggle("SESSIONTAP_STORE_ONLY", "true", "false", false),
    redact: redact as "shared" | "all" | "off",
    noRedact: flags.has("--no-redact"),
    json: flags.has("--json"),
    format: format as "md" | "html" | "jsonl",
    out: str("--out"),
    cwd: str("--cwd"),
    dryRun: flags.has("--dry-run"),
    force: flags.has("--force"),
    repair: flags.has("--repair"),
    drainMs: num("SESSIONTAP_DRAIN_MS", "10000", 0, 600_000),
    lockWaitMs: num("SESSIONTAP_LOCK_WAIT_MS", "2000", 0, 600_000),
    drillTimeoutMs: num("SESSIONTAP_DRILL_TIMEOUT_MS", "120000", 1000, 3_600_000),
    jobs: str("--jobs") === null ? null : integer("--jobs", str("--jobs")!, 1, 64),
    maxQueued: num("SESSIONTAP_MAX_QUEUED", "1000", 1, 1_000_000),
    maxMessageBytes: num("SESSIONTAP_MAX_MESSAGE_BYTES", "33554432", 65536, 1 << 30),
    url,
    token: token === undefined ? null : tokenValue(token),
    tokenSource: source("--token", "SESSIONTAP_TOKEN"),
    since: since === null ? null : sinceDate(since),
    session: str("--session"),
    regex: flags.has("--regex"),
    full: flags.has("--full"),
    prices: env.SESSIONTAP_PRICES ? expandHome(env.SESSIONTAP_PRICES, home) : null,
    proxy: proxySettings(flags, env, home),
    sources: {
      port: source("--port", "SESSIONTAP_PORT"),
      mirrorDir: source("--mirror-dir", "SESSIONTAP_MIRROR_DIR"),
      claudeDir: source("--claude-dir", "CLAUDE_CONFIG_DIR"),
    },
  };
}

/** The setting that chose `key`'s value, for a message ("--mirror-dir", "SESSIONTAP_MIRROR_DIR", or the default). */
export function settingName(config: Readonly<Config>, key: "mirrorDir" | "claudeDir" | "port"): string {
  const [flag, envName, fallback] = {
    mirrorDir: ["--mirror-dir", "SESSIONTAP_MIRROR_DIR", "~/.claude/session-mirrors"],
    claudeDir: ["--claude-dir", "CLAUDE_CONFIG_DIR", "~/.claude"],
    port: ["--port", "SESSIONTAP_PORT", "8787"],
  }[key];
  const from = config.sources[key];
  return from === "flag" ? flag : from === "env" ? envName : `the default ${fallback} (set ${flag} or ${envName})`;
}
