// The error table of docs/errors.md, made from src/errors/catalogue.ts.
// `node --import tsx scripts/error-table.ts` prints it; `… scripts/error-table.ts --write` puts it into docs/errors.md.
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";
import { ERROR_CATALOGUE } from "../src/errors/catalogue.ts";

/** The page that holds the error table (test/unit/error-catalogue.test.ts compares it with errorTable()). */
export const ERRORS_PAGE = fileURLToPath(new URL("../docs/errors.md", import.meta.url));

/** The error table as markdown lines: one row per catalogued code, in catalogue order. */
export function errorTable(): string[] {
  const rows = Object.entries(ERROR_CATALOGUE).map(([code, { category, fix }]) => `| \`${code}\` | ${category} | ${fix.replace(/\|/g, "\\|")} |`);
  return ["| Code | Category | What to do |", "|---|---|---|", ...rows];
}

/** The table found in a page's text: from its header line to the last row that follows it. */
export function tableIn(page: string): { start: number; lines: string[] } {
  const lines = page.split("\n");
  const start = lines.indexOf("| Code | Category | What to do |");
  if (start < 0) return { start, lines: [] };
  let end = start;
  while (end < lines.length && lines[end]!.startsWith("|")) end++;
  return { start, lines: lines.slice(start, end) };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.argv.includes("--write")) {
    const page = readFileSync(ERRORS_PAGE, "utf8");
    const { start, lines } = tableIn(page);
    if (start < 0) throw new Error(`${ERRORS_PAGE} has no line "| Code | Category | What to do |" to replace`);
    const all = page.split("\n");
    all.splice(start, lines.length, ...errorTable());
    writeFileSync(ERRORS_PAGE, all.join("\n"));
    console.log(`wrote ${Object.keys(ERROR_CATALOGUE).length} codes into ${ERRORS_PAGE}`);
  } else console.log(errorTable().join("\n"));
}
