/** One check of `sessiontap doctor` and its verdict: what every doctor module returns. */

/** One check's verdict: ok, a warning, or a failure (exit 1), with what to do. */
export interface Check {
  check: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}

/**
 * What to say when the way Claude Code reaches the tap (its base URL, or its HTTPS_PROXY: `name`, set as
 * `where`) leads to nothing: its requests fail — measured with 2.1.328 and 2.1.332 — and how to go
 * around the tap (docs/DESIGN.md "Never in the way").
 */
export function requestsFail(name: string, fromSettings: string | null, start: string): string {
  const bypass = fromSettings === null ? `unset ${name}` : `remove ${name} from "env" in ${fromSettings}`;
  return 'Claude Code\'s requests fail: it retries for about 3 minutes (interactive: "Connection refused … retrying"; ' +
    `claude -p: silent), then stops with "API Error: Connection refused". Start the tap (${start}), or go around it: ${bypass}`;
}
