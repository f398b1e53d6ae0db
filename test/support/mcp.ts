// `sessiontap mcp` as a client meets it: the source on the runtime running the tests, or the binary under test (SESSIONTAP_BINARY),
// driven with the MCP SDK's own client, or with raw protocol lines on a stdin that is then closed.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import process from "node:process";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ROOT, tapCommand } from "./child.ts";

/** A tool's answer: its one text block, and whether it is an error. */
export type Answer = { text: string; isError: boolean };

/** The server's environment: the tests' own less every sessiontap setting, plus `env`. */
export function mcpEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("SESSIONTAP_")) out[k] = v;
  return { ...out, TZ: "UTC", ...env };
}

/** Connects the SDK's client to `sessiontap mcp <args>` (its stdio; `env` given whole, as StdioClientTransport passes almost none by default). */
export async function mcpClient(
  args: string[],
  env: Record<string, string>,
): Promise<{ client: Client; call(name: string, args: Record<string, unknown>): Promise<Answer> }> {
  const { command, args: argv } = tapCommand(["mcp", ...args]);
  const client = new Client({ name: "sessiontap-test", version: "0" });
  await client.connect(new StdioClientTransport({ command, args: argv, env: mcpEnv(env), cwd: ROOT, stderr: "ignore" }));
  const call = async (name: string, args: Record<string, unknown>): Promise<Answer> => {
    const r = await client.callTool({ name, arguments: args }) as { content: { type: string; text: string }[]; isError?: boolean };
    assert.equal(r.content.length, 1);
    assert.equal(r.content[0].type, "text");
    return { text: r.content[0].text, isError: r.isError === true };
  };
  return { client, call };
}

/** Starts `sessiontap mcp <args>` with its stdin a pipe; `serving` resolves once its line on stderr is whole. */
export function startMcp(args: string[], env: Record<string, string>) {
  const { command, args: argv } = tapCommand(["mcp", ...args]);
  const child = spawn(command, argv, { cwd: ROOT, env: mcpEnv(env), stdio: ["pipe", "pipe", "pipe"] });
  const out = { stdout: "", stderr: "" };
  child.stdout!.setEncoding("utf8").on("data", (c: string) => (out.stdout += c));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal })));
  const serving = new Promise<void>((resolve) =>
    child.stderr!.setEncoding("utf8").on("data", (c: string) => {
      out.stderr += c;
      if (out.stderr.includes("\n")) resolve();
    })
  );
  return { child, out, exited, serving };
}

/**
 * Sends `initialize` and one `tools/call` as raw lines and closes stdin right behind them, as a client that is done may;
 * resolves with how the process ended and every line of its stdout, parsed.
 */
export async function callThenClose(args: string[], env: Record<string, string>, name: string, callArgs: Record<string, unknown>) {
  const { child, out, exited, serving } = startMcp(args, env);
  await serving;
  const send = (m: unknown) => child.stdin!.write(JSON.stringify(m) + "\n");
  send({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } } });
  send({ jsonrpc: "2.0", method: "notifications/initialized" });
  send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name, arguments: callArgs } });
  child.stdin!.end();
  const exit = await exited;
  return { exit, stderr: out.stderr, lines: out.stdout.trimEnd().split("\n").map((l) => JSON.parse(l)) };
}
