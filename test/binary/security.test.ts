// The attack pass's reproductions against the compiled binary: `node scripts/test.mjs binary` runs this
// file with SESSIONTAP_BINARY set, so every child in test/security/processes.test.ts is the binary.
import "../security/processes.test.ts";
