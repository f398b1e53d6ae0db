/**
 * @peculiar/x509, loaded only once the Reflect metadata API its dependency injection (tsyringe) checks for
 * as it loads is in place (docs/RUNTIMES.md "The forward proxy"). A static import beside the polyfill's is
 * not enough: reflect-metadata and tsyringe are CommonJS, and Bun ran them in an order of its own — in the
 * compiled binary tsyringe first, and from source now one and now the other first when several test files
 * loaded the library in one process. A dynamic import starts after this module's body, and so after the
 * polyfill, whatever order the static imports ran in.
 */
import "reflect-metadata";
import type * as X509 from "@peculiar/x509";

/** The certificate library, loaded after the polyfill. */
export const x509: typeof X509 = await import("@peculiar/x509");
/** Its types, for signatures. */
export type { X509 };
