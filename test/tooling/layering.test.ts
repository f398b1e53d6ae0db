// The map in docs/DESIGN.md, enforced: every import in src/ runs down the layers the map draws, node:fs is
// imported by the filesystem adapter only, hono by the server module and the viewer's routes only, Bun.* and Deno.* appear in the
// runtime adapter only, and every "docs/X.md "Section"" a comment cites names a section that exists.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { ROOT } from "../support/child.ts";

/** Every folder of src/ and what it may import (besides itself); main.ts, mirror-worker.ts and version.ts stand above all. */
const MAY_IMPORT: Record<string, string[]> = {
  cli: [
    "config",
    "runtime",
    "proxy",
    "server",
    "tap",
    "mirror",
    "viewer",
    "guard",
    "store",
    "writer",
    "restore",
    "storage",
    "transcript",
    "usage",
    "protocol",
    "utils",
    "version.ts",
  ],
  runtime: ["utils"],
  proxy: ["config", "server", "tap", "storage", "utils"],
  server: ["viewer", "protocol", "utils"],
  tap: ["mirror", "storage", "protocol", "utils"],
  mirror: ["guard", "store", "writer", "storage", "protocol", "utils"],
  viewer: ["restore", "storage", "transcript", "usage", "protocol", "utils"],
  guard: ["storage", "transcript", "protocol", "utils"],
  store: ["config", "writer", "storage", "transcript", "protocol", "utils"],
  writer: ["storage", "protocol", "utils"],
  restore: ["storage", "transcript", "usage", "protocol", "utils"],
  storage: ["transcript", "usage", "protocol", "utils"],
  transcript: ["usage", "protocol", "utils"],
  usage: ["protocol", "utils"],
  config: ["protocol"],
  protocol: [],
  utils: [],
};

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : name.endsWith(".ts") ? [path] : [];
  });
}

const SRC = join(ROOT, "src");
const files = sources(SRC);
/** The folder (or top-level file) a path of src/ belongs to. */
const layerOf = (path: string) => relative(SRC, path).split("/")[0];
/** Relative imports and re-exports of a file, resolved to paths. */
function importsOf(file: string): { spec: string; target: string }[] {
  const text = readFileSync(file, "utf8");
  return [...text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/g)].map((m) => ({
    spec: m[1],
    target: m[1].startsWith(".") ? normalize(join(dirname(file), m[1])) : m[1],
  }));
}

describe("the map in docs/DESIGN.md holds", () => {
  it("every folder of src/ is on the map", () => {
    const folders = readdirSync(SRC).filter((n) => statSync(join(SRC, n)).isDirectory());
    assert.deepEqual(folders.filter((f) => !(f in MAY_IMPORT)), [], "a new folder needs its place on the map (here and in docs/DESIGN.md)");
  });

  it("imports run down the layers only", () => {
    const wrong: string[] = [];
    for (const file of files) {
      const from = layerOf(file);
      if (!(from in MAY_IMPORT)) continue; // main.ts, mirror-worker.ts and version.ts stand above every folder
      for (const { spec, target } of importsOf(file)) {
        if (!spec.startsWith(".")) continue;
        const to = layerOf(target);
        if (to !== from && !MAY_IMPORT[from].includes(to)) wrong.push(`${relative(ROOT, file)} imports ${spec} (${from} → ${to})`);
      }
    }
    assert.deepEqual(wrong, []);
  });

  it("no import cycle between files", () => {
    const graph = new Map(files.map((f) => [f, importsOf(f).filter((i) => i.spec.startsWith(".") && i.target.endsWith(".ts")).map((i) => i.target)]));
    const state = new Map<string, "open" | "done">();
    const cycles: string[] = [];
    const visit = (file: string, path: string[]) => {
      if (state.get(file) === "done") return;
      if (state.get(file) === "open") {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(SRC, f)).join(" → "));
        return;
      }
      state.set(file, "open");
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, "done");
    };
    for (const file of files) visit(file, []);
    assert.deepEqual(cycles, []);
  });

  it("node:fs in the filesystem adapter only, hono in the server module and the viewer's routes only, Bun and Deno globals in the runtime adapter only", () => {
    const rel = (f: string) => relative(ROOT, f);
    const fsUsers = files.filter((f) => importsOf(f).some((i) => /^(node:)?fs(\/promises)?$/.test(i.spec))).map(rel);
    assert.deepEqual(fsUsers, ["src/storage/fs-adapter.ts"]);
    const honoUsers = files.filter((f) => importsOf(f).some((i) => i.spec === "hono" || i.spec.startsWith("hono/"))).map(rel);
    assert.deepEqual(honoUsers, ["src/server/app.ts", "src/viewer/routes.ts"]);
    const runtimeGlobals = files.filter((f) => /\b(Bun|Deno)\.[a-zA-Z]/.test(readFileSync(f, "utf8").replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, ""))).map(rel);
    assert.deepEqual(runtimeGlobals.filter((f) => !f.startsWith("src/runtime/")), []);
  });

  it("every docs/… section a comment cites exists", () => {
    const missing: string[] = [];
    for (const file of files) {
      for (const m of readFileSync(file, "utf8").matchAll(/docs\/([A-Z]+\.md) "([^"]+)"/g)) {
        const doc = readFileSync(join(ROOT, "docs", m[1]), "utf8");
        const heading = new RegExp(`^#+ ${m[2].replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\b`, "m");
        const row = `**${m[2]}`;
        if (!heading.test(doc) && !doc.includes(row)) missing.push(`${relative(ROOT, file)} cites docs/${m[1]} "${m[2]}"`);
      }
    }
    assert.deepEqual(missing, []);
  });

  it("no comment cites a document outside the repository", () => {
    const outside = files.filter((f) => /SPEC §|RUNTIME-NOTES|\bseeds?\/|\bseed 00\d|\bissues? \d+\b|shared\//.test(readFileSync(f, "utf8"))).map((f) =>
      relative(ROOT, f)
    );
    assert.deepEqual(outside, []);
  });
});
