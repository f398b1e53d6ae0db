// Claude Code's project directory names (src/storage/claude-projects.ts), as read from the 2.1.328
// executable. The e2e tests check the short form against the real CLI (test/e2e/claude-mirror.test.ts
// and restore-round-trip.test.ts resume from the directory restore chose). Runs under Bun and Deno.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { encodeProjectDir, findProjectDir, javaHash, MAX_PROJECT_DIR } from "../../src/storage/claude-projects.ts";

describe("encodeProjectDir()", () => {
  it("every character outside [A-Za-z0-9] becomes '-'", () => {
    assert.equal(encodeProjectDir("/home/ann/my.project_v2"), "-home-ann-my-project-v2");
    assert.equal(encodeProjectDir("/tmp/a b/ü"), "-tmp-a-b--");
    assert.equal(encodeProjectDir("/x/😀"), "-x---", "a character outside the BMP is two UTF-16 units, two dashes");
  });

  it("a name of exactly 200 characters is kept whole", () => {
    const path = "/" + "a".repeat(199);
    assert.equal(encodeProjectDir(path), "-" + "a".repeat(199));
  });

  it("a longer name is cut to 200 and followed by '-' and the base-36 Java hash of the original path", () => {
    const path = "/" + "deep/".repeat(60);
    const name = encodeProjectDir(path);
    assert.equal(name.slice(0, MAX_PROJECT_DIR), path.replace(/[^a-zA-Z0-9]/g, "-").slice(0, MAX_PROJECT_DIR));
    assert.equal(name, `${name.slice(0, 200)}-${Math.abs(javaHash(path)).toString(36)}`);
    assert.match(name.slice(200), /^-[0-9a-z]+$/);
  });

  it("javaHash() is Java's String.hashCode", () => {
    assert.equal(javaHash(""), 0);
    assert.equal(javaHash("hello"), 99162322);
    assert.equal(javaHash("polygenelubricants"), -2147483648); // the classic Integer.MIN_VALUE case
  });
});

describe("findProjectDir()", () => {
  const long = "/" + "very-long-directory-name/".repeat(12);
  const exact = encodeProjectDir(long);

  it("prefers the exact name, and uses it when nothing else exists", () => {
    assert.equal(findProjectDir(long, []), exact);
    assert.equal(findProjectDir(long, [exact, exact.slice(0, 201) + "zzz"]), exact);
    assert.equal(findProjectDir("/short", ["-short"]), "-short");
  });

  it("for a long path, takes the one existing directory sharing the 200-character prefix (another release's hash)", () => {
    const other = exact.slice(0, 201) + "otherhash";
    assert.equal(findProjectDir(long, [other, "-unrelated"]), other);
    assert.equal(findProjectDir(long, [other, exact.slice(0, 201) + "third"]), exact, "two candidates: no guess");
  });
});
