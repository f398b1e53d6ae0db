// The npm packages of a release (`npx sessiontap`, `npm i -g sessiontap`), as esbuild and biome ship
// theirs: one package `sessiontap` whose `bin` (scripts/npm/sessiontap.cjs) starts the binary for the
// machine, and one package per platform, @sessiontap/<target>, holding that binary and declaring its `os`
// and `cpu`, named in the first one's optionalDependencies, so npm installs only the one that fits. The
// repository's own package.json stays private: these are generated, by `npm run release`, into dist/npm/.
import { chmodSync, copyFileSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

/** npm's `os` and `cpu` of a release target (linux-x64 → linux, x64; windows-x64 → win32, x64). */
export function npmPlatform(target) {
  const [os, cpu] = target.name.split("-");
  return { os: os === "windows" ? "win32" : os, cpu };
}

/** The package name of a target's binary. */
export function platformPackageName(target) {
  return `@sessiontap/${target.name}`;
}

/** Hard-links `from` to `to` (the binaries are ~100 MB), copying where a link cannot be made. */
function place(from, to) {
  try {
    linkSync(from, to);
  } catch {
    copyFileSync(from, to);
  }
}

/**
 * Writes the packages for `built` (each {target, file}) under `out`, one directory each (out/sessiontap,
 * out/sessiontap-<target>), replacing what an earlier release left there. Returns their directories.
 */
export function writeNpmPackages(out, version, built) {
  const root = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8"));
  const common = {
    version,
    license: root.license,
    ...(root.homepage ? { homepage: root.homepage } : {}),
    ...(root.repository ? { repository: root.repository } : {}),
  };
  rmSync(out, { recursive: true, force: true });
  const dirs = [];
  for (const { target, file } of built) {
    const dir = join(out, `sessiontap-${target.name}`);
    mkdirSync(join(dir, "bin"), { recursive: true });
    const name = `sessiontap${target.ext ?? ""}`;
    place(file, join(dir, "bin", name));
    chmodSync(join(dir, "bin", name), 0o755);
    const { os, cpu } = npmPlatform(target);
    const pkg = {
      name: platformPackageName(target),
      ...common,
      description: `The sessiontap binary for ${target.name} (installed by the sessiontap package).`,
      os: [os],
      cpu: [cpu],
      files: ["bin/"],
      preferUnplugged: true,
    };
    writeFileSync(join(dir, "package.json"), JSON.stringify(pkg, null, 2) + "\n");
    dirs.push(dir);
  }
  const main = join(out, "sessiontap");
  mkdirSync(join(main, "bin"), { recursive: true });
  copyFileSync(join(ROOT, "scripts", "npm", "sessiontap.cjs"), join(main, "bin", "sessiontap.cjs"));
  chmodSync(join(main, "bin", "sessiontap.cjs"), 0o755);
  copyFileSync(join(ROOT, "README.md"), join(main, "README.md"));
  const pkg = {
    name: "sessiontap",
    ...common,
    description: root.description,
    bin: { sessiontap: "bin/sessiontap.cjs" },
    files: ["bin/", "README.md"],
    optionalDependencies: Object.fromEntries(built.map(({ target }) => [platformPackageName(target), version])),
    engines: { node: ">=18" },
  };
  writeFileSync(join(main, "package.json"), JSON.stringify(pkg, null, 2) + "\n");
  return [main, ...dirs];
}
