/** What several command groups' specs share. */
import type { OptionSpec, ParsedOptions } from "../command-spec.js";

export const FIGHTER: OptionSpec = {
  flag: "--fighter",
  value: "name|id",
  summary: "The fighter",
  default: "spar",
};

/**
 * The parser types every option as declared, so a command may read its options as its own shape.
 * This is the one place that says so.
 */
export const as = <T>(options: ParsedOptions) => options as unknown as T;

/** `--limit` of the paged lists: lib/paging.ts's bounds, which the daemon holds as well. */
export const PAGE_LIMIT = { min: 1, max: 500 };
