// Prints the README's error table from src/error-catalogue.ts: `node --import tsx scripts/error-table.ts`.
import { ERROR_CATALOGUE } from "../src/error-catalogue.ts";

console.log("| Code | Category | What to do |\n|---|---|---|");
for (const [code, { category, fix }] of Object.entries(ERROR_CATALOGUE)) console.log(`| \`${code}\` | ${category} | ${fix.replace(/\|/g, "\\|")} |`);
