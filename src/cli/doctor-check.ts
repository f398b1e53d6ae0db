/** One check of `sessiontap doctor` and its verdict: what every doctor module returns. */

/** One check's verdict: ok, a warning, or a failure (exit 1), with what to do. */
export interface Check {
  check: string;
  status: "ok" | "warn" | "fail";
  detail: string;
}
