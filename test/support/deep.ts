/** Hostile nesting for the deep-record tests: values and a session whose tool input is nested very deep. */
import { rec } from "./recover.ts";

type Rec = Record<string, unknown>;

/** `{"a":{"a":…1…}}`, `depth` levels. */
export function deepValue(depth: number): unknown {
  return JSON.parse('{"a":'.repeat(depth) + "1" + "}".repeat(depth));
}

/** A session whose assistant calls a tool with an input nested `depth` levels (and gets a result as deep). */
export function deepSession(sessionId: string, depth: number): Rec[] {
  return [
    rec("user", "d-u1", null, "go deep", { sessionId }),
    rec("assistant", "d-a1", "d-u1", [{ type: "tool_use", id: "toolu_deep", name: "Deep", input: deepValue(depth) }], { sessionId }),
    rec("user", "d-u2", "d-a1", [{ type: "tool_result", tool_use_id: "toolu_deep", content: [{ type: "weird", nested: deepValue(depth) }] }], { sessionId }),
  ];
}
