#!/usr/bin/env node
// Hosts one terminal program for a test: a pseudo-terminal from `@lydell/node-pty` whose output is rendered
// by `@xterm/headless`, so the test reads the screen a user would see. Always run by Node, never by the
// test's own runtime: node-pty's reads of the pty master stop early under Bun (the program gets SIGHUP
// when it waits for input), and running it in Node keeps both test runtimes on the same code.
// test/support/terminal.ts drives it over stdio, one JSON object per line each way:
//   in:  {"id":1,"op":"write","data":"text"} | {"id":2,"op":"key","key":"Up"} | {"id":3,"op":"screen"} | {"id":4,"op":"kill"}
//        | {"id":5,"op":"resize","cols":120,"rows":40} (the window changes size: the program gets SIGWINCH from the terminal)
//   out: {"id":1} | {"id":3,"screen":"…","exited":false} | {"id":n,"error":"…"} | {"event":"exit","code":0,"signal":0}
// The start options ({command, args, cwd, env, cols, rows}) come as one JSON argument. Like tmux's
// remain-on-exit, the screen stays readable after the program exits, until stdin closes.
import { closeSync, constants, openSync } from "node:fs";
import { createRequire } from "node:module";
import process from "node:process";
import { createInterface } from "node:readline";

const require = createRequire(import.meta.url);

/** Bytes a key sends, as a terminal sends them (arrows follow the program's cursor-key mode). */
function keyBytes(key, applicationCursor) {
  const arrows = { Up: "A", Down: "B", Right: "C", Left: "D" };
  if (key in arrows) return `\x1b${applicationCursor ? "O" : "["}${arrows[key]}`;
  const named = { Enter: "\r", Escape: "\x1b", Tab: "\t", BSpace: "\x7f", Space: " " };
  if (key in named) return named[key];
  const ctrl = /^C-([a-z])$/.exec(key);
  if (ctrl) return String.fromCharCode(ctrl[1].charCodeAt(0) - 96);
  throw new Error(`unknown key name ${JSON.stringify(key)}`);
}

const send = (message) => process.stdout.write(`${JSON.stringify(message)}\n`);

let pty;
let Terminal;
try {
  pty = require("@lydell/node-pty");
  ({ Terminal } = require("@xterm/headless"));
} catch (error) {
  send({ event: "fatal", error: `cannot load the terminal packages (@lydell/node-pty, @xterm/headless): ${error.message}; run \`npm ci\`` });
  process.exit(1);
}

const options = JSON.parse(process.argv[2] ?? "{}");
const term = new Terminal({ cols: options.cols, rows: options.rows, allowProposedApi: true, scrollback: 0 });
let exited = null;
let child;
try {
  child = pty.spawn(options.command, options.args ?? [], {
    name: "xterm-256color",
    cols: options.cols,
    rows: options.rows,
    cwd: options.cwd,
    env: options.env,
  });
} catch (error) {
  send({ event: "fatal", error: `cannot start ${options.command}: ${error.message}` });
  process.exit(1);
}
// Holding the terminal's other end open keeps the program's last output readable: when the program exits
// and the other end closes, Linux may report a hangup on our end before the last bytes are read.
let slave = null;
try {
  slave = openSync(child.ptsName, constants.O_RDWR | constants.O_NOCTTY);
} catch (error) {
  process.stderr.write(`pty-host: cannot hold ${child.ptsName} open (${error.message}): the program's last output may be lost\n`);
}
child.onData((data) => term.write(data));
// Answers to the program's queries (cursor position, device attributes) go back to it, as a terminal's do.
term.onData((data) => {
  if (exited === null) child.write(data);
});
child.onExit(({ exitCode, signal }) => {
  exited = { code: exitCode, signal };
  if (slave !== null) closeSync(slave);
  term.write("", () => send({ event: "exit", ...exited }));
});

/** The visible screen as text, trailing blanks dropped, once everything received so far is rendered. */
function screen() {
  return new Promise((resolve) => {
    term.write("", () => {
      const buffer = term.buffer.active;
      const lines = [];
      for (let i = 0; i < term.rows; i++) lines.push(buffer.getLine(buffer.viewportY + i)?.translateToString(true) ?? "");
      resolve(lines.join("\n").replace(/\s+$/, ""));
    });
  });
}

const input = createInterface({ input: process.stdin });
input.on("line", async (line) => {
  let request;
  try {
    request = JSON.parse(line);
    if (request.op === "write" || request.op === "key") {
      if (exited !== null) throw new Error("the program has exited");
      child.write(request.op === "write" ? request.data : keyBytes(request.key, term.modes.applicationCursorKeysMode));
      send({ id: request.id });
    } else if (request.op === "screen") {
      send({ id: request.id, screen: await screen(), exited: exited !== null });
    } else if (request.op === "resize") {
      if (exited !== null) throw new Error("the program has exited");
      child.resize(request.cols, request.rows);
      term.resize(request.cols, request.rows);
      send({ id: request.id });
    } else if (request.op === "kill") {
      if (exited === null) child.kill("SIGKILL");
      send({ id: request.id });
    } else {
      throw new Error(`unknown op ${JSON.stringify(request.op)}`);
    }
  } catch (error) {
    send({ id: request?.id, error: error.message });
  }
});
input.on("close", () => {
  if (exited === null) child.kill("SIGKILL");
  process.exit(0);
});
