import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { CtsError } from "../errors/cts-error.ts";

/** Reads an ACL token file (trimmed); a missing or empty file is a usage error naming it. */
export function readTokenFile(path: string): string {
  let token: string;
  try {
    token = readFileSync(path, "utf8").trim();
  } catch (cause) {
    throw new CtsError("CONSUL_TOKEN_FILE", "usage", `cannot read the Consul token file '${path}': ${(cause as Error).message}. Fix consul.tokenFile (or CONSUL_HTTP_TOKEN_FILE).`, { cause });
  }
  if (!token) throw new CtsError("CONSUL_TOKEN_FILE", "usage", `the Consul token file '${path}' is empty. Write the token into it.`);
  return token;
}

/**
 * Calls `onChange(token)` whenever the file's token changes (polling, so a file replaced by a
 * rename — how secret managers rotate — is seen too). Returns a function that stops watching.
 */
export function watchTokenFile(path: string, current: string, onChange: (token: string) => void, intervalMs = 2000): () => void {
  let last = current;
  const listener = () => {
    let next: string;
    try {
      next = readFileSync(path, "utf8").trim();
    } catch {
      return; // mid-rotation: keep the old token until the new file is there
    }
    if (next && next !== last) {
      last = next;
      onChange(next);
    }
  };
  watchFile(path, { interval: intervalMs, persistent: false }, listener);
  return () => unwatchFile(path, listener);
}
