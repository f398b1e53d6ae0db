/** The general `--help` text: every command's usage line (from the command table) and every setting. */
import { COMMANDS, usageLine } from "./commands.ts";

/** What `sessiontap --help` prints. */
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
Is it working? sessiontap doctor. With the tap stopped, Claude Code's requests fail (after ~3 minutes
of retries): start it again, or go around it: unset ANTHROPIC_BASE_URL.

Settings (flag, then environment, then default):
  --port N            SESSIONTAP_PORT              8787 (0 picks a free port)
  --host ADDR         SESSIONTAP_HOST              127.0.0.1 (beyond loopback, /_tap/ needs a token)
  --token TOKEN       SESSIONTAP_TOKEN             none on loopback; beyond it, one generated and printed
  --upstream URL      SESSIONTAP_UPSTREAM          https://api.anthropic.com
  --mirror-dir DIR    SESSIONTAP_MIRROR_DIR        ~/.claude/session-mirrors
  --no-mirror         SESSIONTAP_MIRROR=on|off     on
                      SESSIONTAP_MAX_BYTES         104857600 (rotate the active file at 100 MiB)
                      SESSIONTAP_RETENTION_DAYS    0 (off: the mirror keeps every session; N removes files
                                                   older than N days; keep N past Claude Code's cleanup)
                      SESSIONTAP_MAX_SESSIONS      1024 (sessions kept in memory, LRU)
                      SESSIONTAP_INCLUDE_THINKING  true (false drops thinking blocks)
                      SESSIONTAP_SIDE_REQUESTS     on (off: side requests are not mirrored)
                      SESSIONTAP_MAX_QUEUED        1000 (commits kept in memory while writes fail)
                      SESSIONTAP_MAX_MESSAGE_BYTES 33554432 (an answer's bytes the mirror keeps; the rest
                                                   is marked truncated; a larger request is not mirrored)
                      SESSIONTAP_LOCK_WAIT_MS      2000 (longest wait for another tap's lock on a session)
                      SESSIONTAP_DRAIN_MS          10000 (longest wait for in-flight streams on SIGTERM)
  --claude-dir DIR    CLAUDE_CONFIG_DIR            ~/.claude
                      SESSIONTAP_CLAUDE            claude (on PATH): the Claude Code sessiontap claude runs
                      SESSIONTAP_GUARD=on|off      on when the Claude Code config dir exists: say at once
                                                   when Claude Code loses the transcript of a mirrored session
  --store URL         SESSIONTAP_STORE             none (files only); postgres://… a shared store for teams:
                                                   list, show, export and restore read it when set
                      SESSIONTAP_STORE_ONLY        false (true: the store only; the tree is its outage spool)
                      SESSIONTAP_PRICES            none (a JSON price file read over the built-in table:
                                                   list, show, usage, export and the viewer estimate costs)
  --proxy-port N      SESSIONTAP_PROXY_PORT        off (also a forward proxy for HTTPS_PROXY: decrypts the
                                                   API hosts it knows, tunnels the rest; 0 picks a port)
                      SESSIONTAP_PROXY_HOSTS       none (more host names it decrypts, spoken to as the API)
                      SESSIONTAP_PROXY_UPSTREAM    none (HOST=URL,...: send a known host's requests elsewhere)
                      SESSIONTAP_PROXY_TUNNEL      on (off: refuse every host it does not know)
                      SESSIONTAP_PROXY_TIMEOUT_MS  10000 (longest wait for a CONNECT or a TLS handshake)
                      SESSIONTAP_CA_DIR            ~/.config/sessiontap (its CA; NODE_EXTRA_CA_CERTS names
                                                   ca.pem there; $XDG_CONFIG_HOME/sessiontap when set)

Exit status: 0 success, 1 the command found a problem, 2 a usage error. sessiontap CMD --help says more.

The rest is in the README and docs/: docs/commands.md (every command), docs/settings.md, docs/recovery.md
(restore, the guard, doctor), docs/teams.md (the shared store), docs/providers.md (providers and proxy
mode), docs/service.md (running as a service), docs/mirror.md (the mirror's files), docs/failures.md
(health and every error line), docs/releases.md (binaries, npm, platforms), docs/development.md.
`;
