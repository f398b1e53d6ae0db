/** A bad flag or value: one line on stderr, exit status 2 (docs/DESIGN.md "Command line"). */
export class UsageError extends Error {
  override name = "UsageError";
}
