/**
 * Settings from flags, then environment, then defaults (docs/DESIGN.md "Command line"). Pure:
 * (argv, env, home) → frozen Config, or a UsageError naming the one setting or flag that is wrong.
 */
import { type Command, COMMANDS } from "./commands.ts";
import { checkArgs, checkFlags, type Env, pick, splitArgs } from "./args.ts";
import { expandHome, httpUrl, integer, onOff, sinceDate, storeUrl, upstreamUrl } from "./values.ts";
import { UsageError } from "./usage-error.ts";
import { type ProxySettings, proxySettings } from "./proxy-settings.ts";
import { tokenBits, WEAK_TOKEN_BITS } from "./token-strength.ts";

export { type Command, COMMANDS, UsageError };

/** Where a setting's value came from: a flag, the environment, or the default. */
export type SettingSource = "flag" | "env" | "default";

/** Everything the tap and its commands read from the outside world, resolved once. */
export interface Config {
  command: Command | "help" | "version";
  /** With `command: "help"`: the command whose help was asked for (null: the general help). */
  helpFor: Command | null;
  positional: string[];
  port: number;
  host: string;
  upstream: string;
  mirrorDir: string;
  mirror: boolean;
  maxBytes: number;
  retentionDays: number;
  maxSessions: number;
  includeThinking: boolean;
  /** Mirror one-shot side requests (titles, summaries, probes) into `side/`. */
  sideRequests: boolean;
  claudeDir: string;
  /** The guard (SESSIONTAP_GUARD=on|off): null when unset, which means on when the Claude Code config dir exists. */
  guard: boolean | null;
  /** The shared PostgreSQL store (docs/DESIGN.md "The shared store"): a postgres:// or postgresql:// URL, or null for files only. */
  store: string | null;
  /** With a store: true writes only the store (the tree is the outage spool); false writes both. */
  storeOnly: boolean;
  json: boolean;
  format: "md" | "html" | "jsonl";
  out: string | null;
  cwd: string | null;
  dryRun: boolean;
  force: boolean;
  repair: boolean;
  /** How long SIGTERM waits for in-flight responses before closing them. */
  drainMs: number;
  /** How long a write waits for another process's lock on the same conversation before queueing. */
  lockWaitMs: number;
  /** Most commits kept in memory while writes fail. */
  maxQueued: number;
  /** Largest answer (and request body) the mirror keeps; past it an answer is kept truncated, marked (docs/RELIABILITY.md "Trust boundaries"). */
  maxMessageBytes: number;
  /** doctor: the tap to check (`--url`), or null. */
  url: string | null;
  /** The token `/_tap/` requires (`--token` / SESSIONTAP_TOKEN); serve generates one beyond loopback when null. doctor sends it. */
  token: string | null;
  /** Where the token came from ("flag", "env"), for the startup block. */
  tokenSource: SettingSource;
  /** list, usage: `--since` as given (YYYY-MM-DD, today, yesterday, Nd), lower case; null for all time. */
  since: string | null;
  /** search: the session to search (`--session`), or null for every session. */
  session: string | null;
  /** search: QUERY is a regular expression. */
  regex: boolean;
  /** show: everything, nothing summarised. */
  full: boolean;
  /** A price file read over the built-in table (SESSIONTAP_PRICES), or null. */
  prices: string | null;
  /** The forward proxy (docs/DESIGN.md "Proxy mode"), or null when `--proxy-port` / SESSIONTAP_PROXY_PORT is not set. */
  proxy: Readonly<ProxySettings> | null;
  /** Where the settings that name places came from, so an error can name the one that chose it. */
  sources: { port: SettingSource; mirrorDir: SettingSource; claudeDir: SettingSource };
}

/** Resolves argv + env into a frozen Config (docs/DESIGN.md "Command line"). `home` is the user's home directory. */
export function parseConfig(argv: string[], env: Env, home: string): Readonly<Config> {
  const { command: rawCommand, positional, flags } = splitArgs(argv);
  const isCommand = (name: string | undefined): name is Command => name !== undefined && (COMMANDS as readonly string[]).includes(name);
  if (rawCommand === "help") {
    // `sessiontap help [CMD]`
    const about = positional[0];
    if (about !== undefined && !isCommand(about)) throw new UsageError(`unknown command "${about}" (see sessiontap --help)`);
    return helpConfig(about ?? null);
  }
  if (rawCommand !== null && !isCommand(rawCommand)) throw new UsageError(`unknown command "${rawCommand}" (see sessiontap --help)`);
  const named: Command = rawCommand ?? "serve";
  if (flags.has("--help")) return helpConfig(rawCommand === null ? null : named);
  checkFlags(named, flags);
  checkArgs(named, positional);
  const command: Config["command"] = flags.has("--version") ? "version" : named;

  const portRaw = pick(flags, "--port", env, "SESSIONTAP_PORT") ?? "8787";
  const port = integer("port (--port / SESSIONTAP_PORT)", portRaw, 0, 65535);
  const host = pick(flags, "--host", env, "SESSIONTAP_HOST") ?? "127.0.0.1";
  if (!/^[A-Za-z0-9.:\-\[\]%]+$/.test(host)) throw new UsageError(`host (--host / SESSIONTAP_HOST) is not an address: "${host}"`);
  const upstream = upstreamUrl(pick(flags, "--upstream", env, "SESSIONTAP_UPSTREAM") ?? "https://api.anthropic.com");
  const mirrorDir = expandHome(pick(flags, "--mirror-dir", env, "SESSIONTAP_MIRROR_DIR") ?? "~/.claude/session-mirrors", home);
  const mirrorEnv = env.SESSIONTAP_MIRROR;
  let mirror = mirrorEnv === undefined || mirrorEnv === "" ? true : onOff("SESSIONTAP_MIRROR", mirrorEnv, ["on"], ["off"]);
  if (flags.has("--no-mirror")) mirror = false;
  const maxBytes = integer("SESSIONTAP_MAX_BYTES", env.SESSIONTAP_MAX_BYTES || "104857600", 1024, Number.MAX_SAFE_INTEGER);
  // Off by default: the mirror is the backup of transcripts Claude Code deletes at 30 days (docs/DESIGN.md "Retention").
  const retentionDays = integer("SESSIONTAP_RETENTION_DAYS", env.SESSIONTAP_RETENTION_DAYS || "0", 0, 36500);
  const maxSessions = integer("SESSIONTAP_MAX_SESSIONS", env.SESSIONTAP_MAX_SESSIONS || "1024", 1, 10_000_000);
  const thinkingRaw = env.SESSIONTAP_INCLUDE_THINKING;
  const includeThinking = thinkingRaw ? onOff("SESSIONTAP_INCLUDE_THINKING", thinkingRaw, ["true"], ["false"]) : true;
  const sideRaw = env.SESSIONTAP_SIDE_REQUESTS;
  const sideRequests = sideRaw ? onOff("SESSIONTAP_SIDE_REQUESTS", sideRaw, ["on"], ["off"]) : true;
  const claudeDir = expandHome(pick(flags, "--claude-dir", env, "CLAUDE_CONFIG_DIR") ?? "~/.claude", home);
  const guardRaw = env.SESSIONTAP_GUARD;
  const guard = guardRaw ? onOff("SESSIONTAP_GUARD", guardRaw, ["on"], ["off"]) : null;
  const storeRaw = pick(flags, "--store", env, "SESSIONTAP_STORE");
  const store = storeRaw === undefined ? null : storeUrl(storeRaw);
  const storeOnlyRaw = env.SESSIONTAP_STORE_ONLY;
  const storeOnly = storeOnlyRaw ? onOff("SESSIONTAP_STORE_ONLY", storeOnlyRaw, ["true"], ["false"]) : false;
  const format = pick(flags, "--format", env, null) ?? "md";
  if (format !== "md" && format !== "html" && format !== "jsonl") throw new UsageError(`--format must be md, html or jsonl, got "${format}"`);
  const drainMs = integer("SESSIONTAP_DRAIN_MS", env.SESSIONTAP_DRAIN_MS || "10000", 0, 600_000);
  const maxQueued = integer("SESSIONTAP_MAX_QUEUED", env.SESSIONTAP_MAX_QUEUED || "1000", 1, 1_000_000);
  const maxMessageBytes = integer("SESSIONTAP_MAX_MESSAGE_BYTES", env.SESSIONTAP_MAX_MESSAGE_BYTES || "33554432", 65536, 1 << 30);
  const lockWaitMs = integer("SESSIONTAP_LOCK_WAIT_MS", env.SESSIONTAP_LOCK_WAIT_MS || "2000", 0, 600_000);
  const str = (f: string) => (typeof flags.get(f) === "string" ? (flags.get(f) as string) : null);
  const source = (flag: string, envName: string): SettingSource =>
    typeof flags.get(flag) === "string" ? "flag" : env[envName] !== undefined && env[envName] !== "" ? "env" : "default";
  const token = pick(flags, "--token", env, "SESSIONTAP_TOKEN") ?? null;
  if (token !== null) {
    // Never echoed back: it guards every conversation.
    if (token.length < 16) throw new UsageError(`token (--token / SESSIONTAP_TOKEN) must be at least 16 characters`);
    // What a bearer token may hold (RFC 6750 §2.1), which is what Hono's bearer-auth accepts.
    if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) {
      throw new UsageError(`token (--token / SESSIONTAP_TOKEN) must be letters, digits and - . _ ~ + / only (a bearer token)`);
    }
    if (tokenBits(token) < WEAK_TOKEN_BITS) {
      throw new UsageError(
        "token (--token / SESSIONTAP_TOKEN) is too easy to guess (repeats, runs like 1234 or abcd, or too few kinds of characters); leave it out and one is generated, or make one with: openssl rand -base64 32",
      );
    }
  }
  const url = str("--url");
  if (url !== null) httpUrl("--url", url);

  const sinceRaw = str("--since");
  const since = sinceRaw === null ? null : sinceDate(sinceRaw);
  const regex = flags.has("--regex");
  if (regex && command === "search") {
    try {
      new RegExp(positional[0], "iu");
    } catch (error) {
      throw new UsageError(
        `search --regex: "${positional[0]}" is not a regular expression (${(error as Error).message.replace(/^Invalid regular expression: /, "")})`,
      );
    }
  }
  const pricesRaw = env.SESSIONTAP_PRICES;
  const prices = pricesRaw === undefined || pricesRaw === "" ? null : expandHome(pricesRaw, home);

  return Object.freeze({
    command,
    helpFor: null,
    positional,
    port,
    host,
    upstream,
    mirrorDir,
    mirror,
    maxBytes,
    retentionDays,
    maxSessions,
    includeThinking,
    sideRequests,
    claudeDir,
    guard,
    store,
    storeOnly,
    json: flags.has("--json"),
    format,
    out: str("--out"),
    cwd: str("--cwd"),
    dryRun: flags.has("--dry-run"),
    force: flags.has("--force"),
    repair: flags.has("--repair"),
    drainMs,
    lockWaitMs,
    maxQueued,
    maxMessageBytes,
    url,
    token,
    tokenSource: source("--token", "SESSIONTAP_TOKEN"),
    since,
    session: str("--session"),
    regex,
    full: flags.has("--full"),
    prices,
    proxy: proxySettings(flags, env, home),
    sources: {
      port: source("--port", "SESSIONTAP_PORT"),
      mirrorDir: source("--mirror-dir", "SESSIONTAP_MIRROR_DIR"),
      claudeDir: source("--claude-dir", "CLAUDE_CONFIG_DIR"),
    },
  });
}

/** The config of a help request: nothing else is read, so `--help` works whatever the environment says. */
function helpConfig(helpFor: Command | null): Readonly<Config> {
  return Object.freeze({ ...parseConfig([], {}, "/"), command: "help", helpFor });
}

/** How to name the setting that chose `key`'s value in a message ("--mirror-dir", "SESSIONTAP_MIRROR_DIR", or the default). */
export function settingName(config: Readonly<Config>, key: "mirrorDir" | "claudeDir" | "port"): string {
  const names = {
    mirrorDir: ["--mirror-dir", "SESSIONTAP_MIRROR_DIR", "the default ~/.claude/session-mirrors"],
    claudeDir: ["--claude-dir", "CLAUDE_CONFIG_DIR", "the default ~/.claude"],
    port: ["--port", "SESSIONTAP_PORT", "the default 8787"],
  }[key];
  const from = config.sources[key];
  return from === "flag" ? names[0] : from === "env" ? names[1] : `${names[2]} (set ${names[0]} or ${names[1]})`;
}
