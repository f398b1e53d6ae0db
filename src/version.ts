// Read from package.json, so the binary's `--version` can never drift from it.
import pkg from "../package.json" with { type: "json" };

export const VERSION: string = pkg.version;
