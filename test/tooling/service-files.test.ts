// The service definitions shipped for the release binaries (scripts/service/): a systemd user unit and a
// launchd agent. Always: each is parsed strictly (the unit's sections and keys, the plist as XML and as a
// plist), says what the README says (binary in ~/.local/bin, `serve`, restart on failure but not on a
// bad setting, SIGTERM with time to drain), and its command line is one the tap accepts. Where the
// platform's own checker exists it has the last word: `systemd-analyze verify` (Linux), `plutil -lint`
// (macOS); where it does not, that test is skipped and says so.
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import process from "node:process";
import { parseConfig } from "../../src/config/parse.ts";
import { ROOT } from "../support/child.ts";
import { parsePlist, type PlistValue } from "../support/plist.ts";

const UNIT = `${ROOT}scripts/service/sessiontap.service`;
const PLIST = `${ROOT}scripts/service/local.sessiontap.plist`;
/** The README and every document under docs/, as one text: where the instructions are. */
const README = [`${ROOT}README.md`, ...readdirSync(`${ROOT}docs`).filter((n) => n.endsWith(".md")).map((n) => `${ROOT}docs/${n}`)]
  .map((path) => readFileSync(path, "utf8"))
  .join("\n");

/** True when `command` can be run here. */
const has = (command: string, args: string[]) => spawnSync(command, args, { encoding: "utf8" }).error === undefined;
const NO_SYSTEMD = has("systemd-analyze", ["--version"])
  ? null
  : "systemd-analyze is not on this machine (not Linux with systemd): the unit was checked by the parser only";
const NO_PLUTIL = has("plutil", ["-help"]) ? null : "plutil is not on this machine (not macOS): the plist was checked by the strict parser only";
for (const reason of [NO_SYSTEMD, NO_PLUTIL]) if (reason) console.log(`SKIPPED: ${reason}`);

/** The unit file's sections: each key's values in order. Throws on a line that is not a comment, a section or key=value. */
function parseUnit(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | null = null;
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) return;
    const section = /^\[([A-Za-z]+)\]$/.exec(line);
    if (section) {
      assert.ok(!sections.has(section[1]), `line ${i + 1}: [${section[1]}] twice`);
      sections.set(section[1], current = new Map());
      return;
    }
    const kv = /^([A-Za-z]+)=(.*)$/.exec(line);
    assert.ok(kv, `line ${i + 1} is not key=value: ${raw}`);
    assert.ok(current, `line ${i + 1}: a key before any section`);
    current!.set(kv![1], [...(current!.get(kv![1]) ?? []), kv![2]]);
  });
  return sections;
}

describe("scripts/service/: the systemd user unit", () => {
  const unit = parseUnit(readFileSync(UNIT, "utf8"));
  const get = (section: string, key: string) => unit.get(section)?.get(key) ?? [];

  it("has only the sections and keys it should (a typo would be ignored by systemd with a warning)", () => {
    const known: Record<string, string[]> = {
      Unit: ["Description"],
      Service: [
        "Type",
        "ExecStart",
        "EnvironmentFile",
        "Environment",
        "UMask",
        "KillSignal",
        "TimeoutStopSec",
        "Restart",
        "RestartSec",
        "RestartPreventExitStatus",
      ],
      Install: ["WantedBy"],
    };
    assert.deepEqual([...unit.keys()], Object.keys(known));
    for (const [section, keys] of unit) for (const key of keys.keys()) assert.ok(known[section].includes(key), `[${section}] ${key}`);
  });

  it("runs ~/.local/bin/sessiontap serve, restarts on failure but not on a bad setting, and gives SIGTERM time to drain", () => {
    assert.deepEqual(get("Service", "ExecStart"), ["%h/.local/bin/sessiontap serve"]);
    assert.deepEqual(get("Service", "Restart"), ["on-failure"]);
    assert.deepEqual(get("Service", "RestartPreventExitStatus"), ["2"], "exit 2 is a usage error");
    assert.deepEqual(get("Service", "KillSignal"), ["SIGTERM"]);
    assert.ok(Number(get("Service", "TimeoutStopSec")[0]) > 10, "longer than the default drain (SESSIONTAP_DRAIN_MS, 10 s)");
    assert.deepEqual(get("Service", "EnvironmentFile"), ["-%h/.config/sessiontap/env"], "optional settings file");
    assert.deepEqual(get("Install", "WantedBy"), ["default.target"], "a user unit starts with the user's session");
    assert.ok(get("Unit", "Description")[0].length > 0);
  });

  it("its command line and environment are ones the tap accepts", () => {
    const [binary, ...args] = get("Service", "ExecStart")[0].split(" ");
    assert.equal(binary, "%h/.local/bin/sessiontap");
    const env = Object.fromEntries(get("Service", "Environment").map((e) => e.split("=", 2) as [string, string]));
    const config = parseConfig(args, env, "/home/someone");
    assert.equal(config.command, "serve");
    assert.equal(config.host, "127.0.0.1", "loopback unless told otherwise");
    assert.equal(env.BUN_CONFIG_MAX_HTTP_REQUESTS, "4096");
  });

  describe("systemd-analyze verify", () => {
    let scratch = "";
    before(() => {
      scratch = mkdtempSync(`${tmpdir()}/sessiontap-unit-`);
    });
    after(() => {
      if (scratch) rmSync(scratch, { recursive: true, force: true });
    });
    it("accepts the unit as a user unit, without a warning", { skip: NO_SYSTEMD ?? false }, () => {
      // verify checks that ExecStart is executable: give it a home whose ~/.local/bin/sessiontap is one.
      mkdirSync(`${scratch}/home/.local/bin`, { recursive: true });
      symlinkSync(process.execPath, `${scratch}/home/.local/bin/sessiontap`);
      mkdirSync(`${scratch}/runtime`, { mode: 0o700 });
      chmodSync(`${scratch}/runtime`, 0o700);
      copyFileSync(UNIT, `${scratch}/sessiontap.service`);
      const r = spawnSync("systemd-analyze", ["--user", "verify", `${scratch}/sessiontap.service`], {
        encoding: "utf8",
        env: { ...process.env, HOME: `${scratch}/home`, XDG_RUNTIME_DIR: `${scratch}/runtime`, SYSTEMD_LOG_COLOR: "0" },
      });
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stderr.trim(), "", "no warning");
    });
    it("rejects a broken copy (the check can fail)", { skip: NO_SYSTEMD ?? false }, () => {
      const broken = readFileSync(UNIT, "utf8").replace("ExecStart=", "ExecStrat=");
      writeFileSync(`${scratch}/broken.service`, broken);
      const r = spawnSync("systemd-analyze", ["--user", "verify", `${scratch}/broken.service`], {
        encoding: "utf8",
        env: { ...process.env, HOME: `${scratch}/home`, XDG_RUNTIME_DIR: `${scratch}/runtime`, SYSTEMD_LOG_COLOR: "0" },
      });
      assert.notEqual(r.status, 0);
      assert.match(r.stderr, /ExecStrat/);
    });
  });
});

describe("scripts/service/: the launchd agent", () => {
  const text = readFileSync(PLIST, "utf8");
  const plist = () => parsePlist(text) as { [key: string]: PlistValue };

  it("is a well-formed XML property list", () => {
    assert.equal(typeof plist(), "object");
    assert.throws(() => parsePlist(text.replace("</array>", "")), /not a well-formed plist/, "the parser notices a missing close tag");
    assert.throws(() => parsePlist(text.replace("<true/>", "<true>")), /not a well-formed plist/);
    assert.throws(() => parsePlist(text.replace("<key>RunAtLoad</key>", "<key>Label</key>")), /duplicate key Label/);
  });

  it("runs __HOME__/.local/bin/sessiontap serve at login, keeps it alive after a failure, logs to ~/Library/Logs", () => {
    const p = plist();
    assert.equal(p.Label, "local.sessiontap");
    assert.deepEqual(p.ProgramArguments, ["__HOME__/.local/bin/sessiontap", "serve"]);
    assert.equal(p.RunAtLoad, true);
    assert.deepEqual(p.KeepAlive, { SuccessfulExit: false });
    assert.equal(p.StandardErrorPath, "__HOME__/Library/Logs/sessiontap.log");
    assert.equal(p.StandardOutPath, "__HOME__/Library/Logs/sessiontap.log");
    assert.ok((p.ExitTimeOut as number) > 10, "longer than the default drain (SESSIONTAP_DRAIN_MS, 10 s)");
    assert.equal(p.Umask, 0o077);
    assert.deepEqual(p.EnvironmentVariables, { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" });
    assert.deepEqual(Object.keys(p).sort(), [
      "EnvironmentVariables",
      "ExitTimeOut",
      "KeepAlive",
      "Label",
      "ProcessType",
      "ProgramArguments",
      "RunAtLoad",
      "StandardErrorPath",
      "StandardOutPath",
      "ThrottleInterval",
      "Umask",
    ]);
  });

  it("its command line is one the tap accepts, and __HOME__ is the only thing to fill in", () => {
    const [binary, ...args] = plist().ProgramArguments as string[];
    assert.equal(binary, "__HOME__/.local/bin/sessiontap");
    assert.equal(parseConfig(args, {}, "/Users/someone").command, "serve");
    const filled = text.replaceAll("__HOME__", "/Users/someone");
    assert.doesNotMatch(filled, /__[A-Z]+__/);
    assert.equal((parsePlist(filled) as { [key: string]: PlistValue }).StandardOutPath, "/Users/someone/Library/Logs/sessiontap.log");
  });

  it("plutil -lint accepts it", { skip: NO_PLUTIL ?? false }, () => {
    const r = spawnSync("plutil", ["-lint", PLIST], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
  });
});

describe("the documented service instructions (README and docs/)", () => {
  it("name both files and how to install them", () => {
    for (
      const text of [
        "scripts/service/sessiontap.service",
        "scripts/service/local.sessiontap.plist",
        "systemctl --user enable --now sessiontap",
        "launchctl bootstrap gui/$(id -u)",
        "sha256sum -c",
      ]
    ) {
      assert.ok(README.includes(text), `neither the README nor docs/ says ${text}`);
    }
  });
});
