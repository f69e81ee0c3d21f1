import { ensureNginx } from "../../scripts/demo/nginx-install.ts";

/**
 * nginx for integration tests: found on PATH or in /usr/sbin, or installed from Debian's packages
 * when we are root (CI runs as root on a fresh machine; every command is printed). Otherwise the
 * test fails with the exact command to run: it never skips itself.
 */
export function nginxForTests(): string {
  return ensureNginx((line) => process.stderr.write(`[nginx] ${line}\n`));
}
