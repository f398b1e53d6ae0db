// The attack pass's reproductions against the compiled binary (docs/RELIABILITY.md "Trust boundaries"):
// `node scripts/test.mjs binary` runs this file with SESSIONTAP_BINARY set, so every child of
// test/security/processes.test.ts, held-up.test.ts and owner.test.ts is the binary.
import "../security/processes.test.ts";
import "../security/held-up.test.ts";
import "../security/owner.test.ts";
