import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The PEM certificates of a CA directory (CTS's `ca_path`): every file under `dir`, sub-directories
 * included, that holds a certificate; other files (keys, READMEs, hash links to nothing) are
 * skipped. Throws the file system's error when `dir` cannot be read, and an Error when it holds no
 * certificate: the caller names the setting in its own words.
 */
export function readCaDir(dir: string): Buffer[] {
  const files = readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() || e.isSymbolicLink())
    .map((e) => join(e.parentPath, e.name))
    .sort();
  const pems = files.flatMap((f) => {
    try {
      const b = readFileSync(f);
      return b.includes("-----BEGIN CERTIFICATE-----") ? [b] : [];
    } catch {
      return []; // a dangling link or an unreadable file is not a CA file
    }
  });
  if (!pems.length) throw new Error("it holds no PEM certificate");
  return pems;
}
