// Settings from flags, then environment, then defaults (docs/DESIGN.md "Command line"): a frozen Config, or a UsageError naming
// the one setting or flag that is wrong. Pure.
import { parseArgs } from "node:util";
import { type Command, COMMAND_SPECS, COMMANDS, DEFAULTS } from "./commands.ts";
import { join } from "node:path/posix";
import { isHostName, widerThanASite } from "./proxy-settings.ts";

export type SettingSource = "flag" | "env" | "default";
export type Config = ReturnType<typeof resolve>;
type Flags = Map<string, string | true>;

const OPTIONS = Object.fromEntries([
  ...Object.values(COMMAND_SPECS).flatMap((spec) => spec.flags).map((x) => [x.flag.slice(2), { type: x.value === null ? "boolean" : "string" }] as const),
  ["help", { type: "boolean", short: "h" }],
  ["version", { type: "boolean", short: "V" }],
]);

/** At most two edits away, for "did you mean". */
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

function splitArgs(argv: string[]): { command: string | null; positional: string[]; flags: Flags } {
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

function checkUsage(command: Command, positional: string[], flags: Flags): void {
  const allowed = new Set([...COMMAND_SPECS[command].flags.map((x) => x.flag), "--help", "--version"]);
  for (const name of flags.keys()) if (!allowed.has(name)) throw new UsageError(`${command} does not take ${name} (see sessiontap ${command} --help)`);
  if (flags.has("--url") && flags.has("--port")) throw new UsageError(`doctor takes --url or --port, not both (see sessiontap doctor --help)`);
  const wanted = COMMAND_SPECS[command].args ?? [];
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

/** Reads nothing else, so `--help` works whatever the environment says. */
function helpConfig(helpFor: Command | null): Readonly<Config> {
  return Object.freeze({ ...resolve("help", [], new Map(), {}, "/"), helpFor });
}

const PLACES = {
  port: ["--port", "SESSIONTAP_PORT"],
  mirrorDir: ["--mirror-dir", "SESSIONTAP_MIRROR_DIR"],
  claudeDir: ["--claude-dir", "CLAUDE_CONFIG_DIR"],
} as const;
type Place = keyof typeof PLACES;

function resolve(command: Command | "help" | "version", positional: string[], flags: Flags, env: Env, home: string) {
  const str = (flag: string) => (typeof flags.get(flag) === "string" ? flags.get(flag) as string : null);
  const source = (flag: string, envName: string): SettingSource => (str(flag) !== null ? "flag" : env[envName] ? "env" : "default");
  const setting = (flag: string, envName: string) => pick(flags, flag, env, envName) ?? DEFAULTS[envName];
  const place = (key: Place) => setting(PLACES[key][0], PLACES[key][1]);
  const num = (name: string, min: number, max: number) => integer(name, env[name] || DEFAULTS[name], min, max);
  const toggle = (name: string, yes: string, no: string) => onOff(name, env[name] || DEFAULTS[name], yes, no);
  const host = setting("--host", "SESSIONTAP_HOST");
  const url = str("--url");
  const since = str("--since");
  const store = pick(flags, "--store", env, "SESSIONTAP_STORE");
  const token = pick(flags, "--token", env, "SESSIONTAP_TOKEN");
  const redact = oneOf("redaction (--redact / SESSIONTAP_REDACT)", setting("--redact", "SESSIONTAP_REDACT").trim().toLowerCase(), ["shared", "all", "off"]);
  if (!/^[A-Za-z0-9.:\-\[\]%]+$/.test(host)) throw new UsageError(`host (--host / SESSIONTAP_HOST) is not an address: "${host}"`);
  const format = oneOf("--format", str("--format") ?? "md", ["md", "html", "jsonl"]);
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
    port: integer("port (--port / SESSIONTAP_PORT)", place("port"), 0, 65535),
    host,
    upstream: upstreamUrl(setting("--upstream", "SESSIONTAP_UPSTREAM")),
    mirrorDir: expandHome(place("mirrorDir"), home),
    mirror: toggle("SESSIONTAP_MIRROR", "on", "off") && !flags.has("--no-mirror"),
    maxBytes: num("SESSIONTAP_MAX_BYTES", 1024, Number.MAX_SAFE_INTEGER),
    // Off by default: the mirror is the backup of transcripts Claude Code deletes at 30 days (docs/DESIGN.md "Retention").
    retentionDays: num("SESSIONTAP_RETENTION_DAYS", 0, 36500),
    maxSessions: num("SESSIONTAP_MAX_SESSIONS", 1, 10_000_000),
    includeThinking: toggle("SESSIONTAP_INCLUDE_THINKING", "true", "false"),
    sideRequests: toggle("SESSIONTAP_SIDE_REQUESTS", "on", "off"),
    claudeDir: expandHome(place("claudeDir"), home),
    // null: unset, which is on when the Claude Code config dir exists.
    guard: env.SESSIONTAP_GUARD ? onOff("SESSIONTAP_GUARD", env.SESSIONTAP_GUARD, "on", "off") : null,
    store: store === undefined ? null : storeUrl(store),
    storeOnly: toggle("SESSIONTAP_STORE_ONLY", "true", "false"),
    redact,
    noRedact: flags.has("--no-redact"),
    json: flags.has("--json"),
    format,
    out: str("--out"),
    cwd: str("--cwd"),
    dryRun: flags.has("--dry-run"),
    force: flags.has("--force"),
    repair: flags.has("--repair"),
    drainMs: num("SESSIONTAP_DRAIN_MS", 0, 600_000),
    lockWaitMs: num("SESSIONTAP_LOCK_WAIT_MS", 0, 600_000),
    drillTimeoutMs: num("SESSIONTAP_DRILL_TIMEOUT_MS", 1000, 3_600_000),
    jobs: str("--jobs") === null ? null : integer("--jobs", str("--jobs")!, 1, 64),
    maxQueued: num("SESSIONTAP_MAX_QUEUED", 1, 1_000_000),
    maxMessageBytes: num("SESSIONTAP_MAX_MESSAGE_BYTES", 65536, 1 << 30),
    url,
    token: token === undefined ? null : tokenValue(token),
    tokenSource: source("--token", "SESSIONTAP_TOKEN"),
    since: since === null ? null : sinceDate(since),
    session: str("--session"),
    regex: flags.has("--regex"),
    full: flags.has("--full"),
    prices: env.SESSIONTAP_PRICES ? expandHome(env.SESSIONTAP_PRICES, home) : null,
    proxy: proxySettings(flags, env, home),
    sources: Object.fromEntries(Object.entries(PLACES).map(([key, [flag, envName]]) => [key, source(flag, envName)])) as Record<Place, SettingSource>,
  };
}

export function settingName(config: Readonly<Config>, key: Place): string {
  const [flag, envName] = PLACES[key];
  const from = config.sources[key];
  return from === "flag" ? flag : from === "env" ? envName : `the default ${DEFAULTS[envName]} (set ${flag} or ${envName})`;
}

export class UsageError extends Error {
  override name = "UsageError";
}

export type Env = Record<string, string | undefined>;

/** Its flag first, then its environment variable (empty is unset). */
function pick(flags: Flags, flag: string, env: Env, envName: string): string | undefined {
  const fromFlag = flags.get(flag);
  return typeof fromFlag === "string" ? fromFlag : env[envName] || undefined;
}

function integer(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw.trim())) throw new UsageError(`${name} must be a whole number, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new UsageError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

/** `value` if `allowed` holds it; the message quotes `raw`. */
function oneOf<T extends string>(name: string, value: string, allowed: readonly T[], raw = value): T {
  if ((allowed as readonly string[]).includes(value)) return value as T;
  throw new UsageError(`${name} must be ${allowed.slice(0, -1).join(", ")} or ${allowed.at(-1)}, got "${raw}"`);
}

const onOff = (name: string, raw: string, yes: string, no: string) => oneOf(name, raw.trim().toLowerCase(), [yes, no], raw) === yes;

function httpUrl(name: string, raw: string): URL {
  const url = URL.parse(raw);
  if (url === null || !/^https?:$/.test(url.protocol)) throw new UsageError(`${name} must be an http(s) URL, got "${raw}"`);
  return url;
}

/** An upstream without a trailing slash; credentials, a query or a fragment would be sent on every request. */
function upstreamUrl(raw: string, name = "upstream (--upstream / SESSIONTAP_UPSTREAM)"): string {
  const url = httpUrl(name, raw);
  if (url.username || url.password || url.search || url.hash) throw new UsageError(`${name} must not carry credentials, a query or a fragment`);
  return url.origin + url.pathname.replace(/\/+$/, "");
}

/** A postgres:// URL, never echoed back: it may hold a password. */
function storeUrl(raw: string): string {
  if (/^postgres(?:ql)?:$/.test(URL.parse(raw)?.protocol ?? "")) return raw;
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(raw)?.[1];
  throw new UsageError(`store (--store / SESSIONTAP_STORE) must be a postgres:// or postgresql:// URL${scheme ? `, got a ${scheme}: URL` : ""}`);
}

/** `--since`: YYYY-MM-DD (a real date), today, yesterday or Nd, lower case. */
function sinceDate(raw: string): string {
  const v = raw.trim().toLowerCase();
  const days = /^(\d{1,5})d$/.exec(v);
  if (v === "today" || v === "yesterday" || (days !== null && Number(days[1]) >= 1)) return v;
  const date = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (date !== null && new Date(Date.UTC(+date[1], +date[2] - 1, +date[3])).toISOString().startsWith(v)) return v;
  throw new UsageError(`--since must be a date YYYY-MM-DD, today, yesterday or Nd (the last N days), got "${raw}"`);
}

function expandHome(path: string, home: string): string {
  return path === "~" ? home : path.startsWith("~/") ? join(home, path.slice(2)) : path;
}

/** The least estimated strength of a token (docs/RELIABILITY.md "Trust boundaries"): about 16 random hex characters'. */
export const WEAK_TOKEN_BITS = 56;

// A floor on a token's bits: log2 of its alphabet per character, but a run that repeats or steps by one (`aaaa`, `1234`)
// counts as its first character plus its length, and a repeated block as the block plus the repeats: what a guesser tries first.
export function tokenBits(token: string): number {
  const size = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^a-zA-Z0-9]/].reduce((n, re, i) => n + (re.test(token) ? [26, 26, 10, 33][i] : 0), 0);
  const perChar = Math.log2(Math.max(size, 2));
  const repeatsEvery = (p: number) => {
    for (let i = p; i < token.length; i++) if (token[i] !== token[i - p]) return false;
    return true;
  };
  let p = 1;
  while (p <= token.length / 2 && !repeatsEvery(p)) p++;
  const block = p <= token.length / 2 ? token.slice(0, p) : token;
  let bits = 0;
  let run = 1;
  let step = 0;
  for (let i = 1; i <= block.length; i++) {
    const d = i < block.length ? block.charCodeAt(i) - block.charCodeAt(i - 1) : Number.NaN;
    if (Math.abs(d) <= 1 && (run === 1 || d === step)) {
      step = d;
      run++;
    } else {
      bits += perChar + (run > 1 ? Math.log2(run) : 0);
      run = 1;
      step = 0;
    }
  }
  const repeats = token.length / block.length;
  return bits + (repeats > 1 ? Math.log2(repeats) : 0);
}

/** The token `/_tap/` requires, checked, never echoed back: it guards every conversation. */
function tokenValue(token: string): string {
  const name = "token (--token / SESSIONTAP_TOKEN)";
  if (token.length < 16) throw new UsageError(`${name} must be at least 16 characters`);
  // What a bearer token may hold (RFC 6750 §2.1), which is what Hono's bearer-auth accepts.
  if (!/^[A-Za-z0-9._~+/-]+=*$/.test(token)) throw new UsageError(`${name} must be letters, digits and - . _ ~ + / only (a bearer token)`);
  if (tokenBits(token) < WEAK_TOKEN_BITS) {
    throw new UsageError(
      `${name} is too easy to guess (repeats, runs like 1234 or abcd, or too few kinds of characters); leave it out and one is generated, or make one with: openssl rand -base64 32`,
    );
  }
  return token;
}

/** Null when no proxy port is set. `addedHosts` are spoken to as api.anthropic.com is; `upstreams`: host → origin and base path; the CA's default follows XDG. */
export type ProxySettings = NonNullable<ReturnType<typeof proxySettings>>;

function proxySettings(flags: Flags, env: Env, home: string) {
  const portRaw = pick(flags, "--proxy-port", env, "SESSIONTAP_PROXY_PORT");
  if (portRaw === undefined) return null;
  const port = integer("proxy port (--proxy-port / SESSIONTAP_PROXY_PORT)", portRaw, 0, 65535);
  const addedHosts = (env.SESSIONTAP_PROXY_HOSTS ?? "").split(",").map((s) => s.trim().toLowerCase()).filter((s) => s !== "");
  for (const host of addedHosts) {
    if (!isHostName(host)) throw new UsageError(`SESSIONTAP_PROXY_HOSTS takes host names separated by commas, got "${host}"`);
    if (widerThanASite(host)) {
      throw new UsageError(`SESSIONTAP_PROXY_HOSTS: ${host} is wider than one site, and the proxy's CA would sign for all under it; name the host itself`);
    }
  }
  const upstreams: Record<string, string> = {};
  for (const pair of (env.SESSIONTAP_PROXY_UPSTREAM ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "")) {
    const eq = pair.indexOf("=");
    const host = pair.slice(0, Math.max(eq, 0)).trim().toLowerCase();
    if (eq < 0 || !isHostName(host)) throw new UsageError(`SESSIONTAP_PROXY_UPSTREAM takes HOST=URL pairs separated by commas, got "${pair}"`);
    upstreams[host] = upstreamUrl(pair.slice(eq + 1).trim(), `SESSIONTAP_PROXY_UPSTREAM (for ${host})`);
  }
  const configHome = env.XDG_CONFIG_HOME !== undefined && env.XDG_CONFIG_HOME.startsWith("/") ? env.XDG_CONFIG_HOME : `${home.replace(/\/+$/, "")}/.config`;
  const caDir = expandHome(env.SESSIONTAP_CA_DIR || `${configHome}/sessiontap`, home);
  const timeoutMs = integer("SESSIONTAP_PROXY_TIMEOUT_MS", env.SESSIONTAP_PROXY_TIMEOUT_MS || DEFAULTS.SESSIONTAP_PROXY_TIMEOUT_MS, 100, 600_000);
  const tunnel = onOff("SESSIONTAP_PROXY_TUNNEL", env.SESSIONTAP_PROXY_TUNNEL || DEFAULTS.SESSIONTAP_PROXY_TUNNEL, "on", "off");
  return Object.freeze({ port, addedHosts: Object.freeze(addedHosts), upstreams: Object.freeze(upstreams), caDir, timeoutMs, tunnel });
}
