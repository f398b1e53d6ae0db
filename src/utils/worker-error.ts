/** One line from a Worker's error event, for stderr and health. */

/**
 * A worker error's message as one line: Bun puts the source excerpt and the stack around it, and a
 * problem in health and on stderr is one line (the worker itself reports what it can; this is the backstop).
 */
export function workerErrorLine(message: string): string {
  const lines = message.split("\n").map((l) => l.trim()).filter((l) => l !== "");
  const named = lines.find((l) => /^(?:Uncaught )?(?:error|[A-Za-z]*Error): /.test(l));
  return (named ?? lines[0] ?? "").replace(/^Uncaught /, "");
}
