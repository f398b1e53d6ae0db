/** Why the proxy could not start (its CA, a setting, its port): `serve` prints the message and exits 2. */
export class ProxyStartError extends Error {
  override name = "ProxyStartError";
}
