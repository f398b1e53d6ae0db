// The one `bun build --compile` command line, for `npm run build` (scripts/build.mjs) and `npm run release`
// (scripts/release.mjs). The mirror engine's Worker script is a second entry point: the binary embeds it,
// and main.ts names it by a URL relative to itself (docs/RUNTIMES.md "Compiling"). --format=esm is what
// lets --bytecode resolve it.

/** Arguments to `bun` that compile the tap into `outfile`, for Bun's `target` (undefined: this machine). */
export function compileArgs(outfile, target) {
  const args = ["build", "--compile", "--minify", "--bytecode", "--format=esm", "src/main.ts", "src/mirror-worker.ts", "--outfile", outfile];
  if (target) args.push(`--target=${target}`);
  return args;
}
