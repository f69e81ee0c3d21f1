import { basename } from "node:path";
import { OWN_PACKAGE, VERSION } from "../version.ts";

/** What a cts project's package.json needs; versions come from cts's own package.json, so they match. */
export function projectPackage(): { type: string; scripts: Record<string, string>; dependencies: Record<string, string>; devDependencies: Record<string, string> } {
  const ours = { ...OWN_PACKAGE.dependencies, ...OWN_PACKAGE.devDependencies };
  const pick = (names: string[]) => Object.fromEntries(names.map((n) => [n, ours[n] ?? "*"]));
  return {
    type: "module",
    scripts: {
      test: "node --import tsx --test test/*.test.ts",
      typecheck: "tsc --noEmit",
    },
    // The provider bindings the example task uses, and the cdktf they are built for.
    dependencies: { [OWN_PACKAGE.name]: `^${VERSION}`, ...pick(["@cdktf/provider-local", "cdktf", "constructs"]) },
    devDependencies: pick(["typescript", "@types/node", "tsx"]),
  };
}

/** A new package.json for a project in `dir`. */
export function newPackageJson(dir: string): string {
  const name = basename(dir).toLowerCase().replace(/[^a-z0-9._-]+/g, "-").replace(/^[._-]+/, "") || "cts-project";
  return JSON.stringify({ name, private: true, ...projectPackage() }, null, 2) + "\n";
}

/**
 * Adds what a cts project needs to an existing package.json without changing anything already
 * there (`npm i cdktf-sync` creates one with only the dependency). Returns the new text and the
 * added keys, or the problems it would not fix itself.
 */
export function completePackageJson(text: string): { text: string; added: string[]; warnings: string[] } {
  const pkg = JSON.parse(text) as Record<string, unknown>;
  const want = projectPackage();
  const added: string[] = [];
  const warnings: string[] = [];
  if (pkg.type === undefined) {
    pkg.type = want.type;
    added.push("type");
  } else if (pkg.type !== "module")
    warnings.push(`package.json has "type": ${JSON.stringify(pkg.type)}; cts.config.ts and the tasks are ES modules. Set "type": "module" (tsc reports the imports otherwise).`);
  for (const section of ["scripts", "dependencies", "devDependencies"] as const) {
    const have = (pkg[section] ?? {}) as Record<string, string>;
    const other = section === "dependencies" ? ((pkg.devDependencies ?? {}) as Record<string, string>) : section === "devDependencies" ? ((pkg.dependencies ?? {}) as Record<string, string>) : {};
    for (const [k, v] of Object.entries(want[section])) {
      if (k in have || k in other) continue;
      have[k] = v;
      added.push(`${section}.${k}`);
    }
    pkg[section] = have;
  }
  const indent = /^\{\n(\s+)/.exec(text)?.[1] ?? "  ";
  return { text: JSON.stringify(pkg, null, indent) + "\n", added, warnings };
}
