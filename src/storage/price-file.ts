/**
 * The price table the reading commands and the viewer use: the built-in one, or the file SESSIONTAP_PRICES
 * names read over it (see usage/prices.ts for its shape).
 */
import { describe } from "../utils/describe-error.ts";
import type { FsAdapter } from "./fs-adapter.ts";
import { BUILTIN_PRICES, parsePriceFile, PriceFileError, type PriceTable } from "../usage/prices.ts";

/** Loads the table; a file that cannot be read or used throws a PriceFileError whose message is one line naming it. */
export async function loadPrices(fs: FsAdapter, path: string | null): Promise<PriceTable> {
  if (path === null) return BUILTIN_PRICES;
  const where = `the price file ${path} (SESSIONTAP_PRICES)`;
  let text: string;
  try {
    text = await fs.readText(path);
  } catch (error) {
    throw new PriceFileError(`cannot read ${where}: ${describe(error)}`);
  }
  try {
    return parsePriceFile(text, path);
  } catch (error) {
    throw new PriceFileError(`${where} ${(error as Error).message}`);
  }
}
