/**
 * The viewer page's one script: the browser client (client/main.ts and what it imports) bundled into one
 * classic script by Bun's bundler (docs/DESIGN.md "The viewer"). The compiled binary's build bundles it
 * once and defines it in (scripts/compile-args.mjs); running from source, it is bundled the first time
 * the page is asked for, so what the page runs is always the client as it is on disk.
 */

/** The script the binary's build defined, if this is the binary. */
const PREBUILT = (globalThis as { SESSIONTAP_VIEWER_CLIENT?: string }).SESSIONTAP_VIEWER_CLIENT;
/** The client's entry module. */
const ENTRY = new URL("./client/main.ts", import.meta.url);

/** Bundles a browser module with what it imports into one minified classic script (the runtime's part). */
export type Bundler = (entry: URL) => Promise<string>;

let built: Promise<string> | null = null;

/** The page's script: the binary's own, else the client bundled by `bundle` (once; again after a failure). */
export function clientScript(bundle: Bundler): Promise<string> {
  if (PREBUILT !== undefined) return Promise.resolve(PREBUILT);
  built ??= bundle(ENTRY).catch((error) => {
    built = null;
    throw new Error(`the viewer's script could not be built (${error instanceof Error ? error.message.split("\n")[0] : String(error)})`);
  });
  return built;
}
