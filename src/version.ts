/** The package version, read from package.json so the binary's `--version` can never drift from it. */
import pkg from "../package.json" with { type: "json" };

/** sessiontap's version string, e.g. "0.1.0". */
export const VERSION: string = pkg.version;
