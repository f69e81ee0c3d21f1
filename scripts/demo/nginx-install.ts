import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The command a user without root runs to get nginx (Debian/Ubuntu packages). */
export const NGINX_INSTALL_COMMAND = "sudo apt-get update && sudo apt-get install -y nginx-light";

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nginx binary: $CTS_NGINX_BIN, then PATH, then /usr/sbin (not on a normal user's PATH). */
export function findNginx(): string | undefined {
  const own = process.env.CTS_NGINX_BIN;
  if (own) return executable(own) ? own : undefined;
  const dirs = [...(process.env.PATH ?? "").split(delimiter), "/usr/sbin", "/usr/local/sbin", "/sbin"];
  for (const dir of dirs) if (dir && executable(join(dir, "nginx"))) return join(dir, "nginx");
  return undefined;
}

function run(cmd: string, args: string[], say: (line: string) => void): boolean {
  say(`$ ${cmd} ${args.join(" ")}`);
  // Output goes to our stderr as it comes (an install can take a minute and should not look hung),
  // never to stdout, which a test runner may be parsing.
  const res = spawnSync(cmd, args, { stdio: ["ignore", 2, 2], env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" } });
  return res.status === 0;
}

/**
 * Returns the path of nginx, installing Debian's `nginx-light` (or `nginx` where the light build is
 * not packaged) with apt-get when it is missing and we are root. Without root, or without apt-get,
 * it throws with the exact command to run. Every command it runs is printed through `say`.
 */
export function ensureNginx(say: (line: string) => void = (l) => process.stderr.write(l + "\n")): string {
  const found = findNginx();
  if (found) return found;
  if (process.env.CTS_NGINX_BIN) throw new Error(`CTS_NGINX_BIN is set to '${process.env.CTS_NGINX_BIN}', which is not an executable file. Unset it or point it at nginx.`);
  const root = process.getuid?.() === 0;
  const apt = spawnSync("sh", ["-c", "command -v apt-get"], { encoding: "utf8" }).status === 0;
  if (!root || !apt) {
    throw new Error(
      `nginx is not installed, and this ${root ? "machine has no apt-get" : "process is not root"}, so it cannot be installed automatically.\n` +
        `Install it, then run again:\n    ${apt ? NGINX_INSTALL_COMMAND : "install nginx with your package manager (the binary must be on PATH or in /usr/sbin)"}\n` +
        `(or point CTS_NGINX_BIN at an nginx binary).`,
    );
  }
  say("nginx is missing; installing it from Debian's packages (running as root)");
  const attempts: Array<() => boolean> = [
    () => run("apt-get", ["install", "-y", "--no-install-recommends", "nginx-light"], say),
    // A fresh machine has no package lists yet: update once, then try again.
    () => run("apt-get", ["update"], say) && run("apt-get", ["install", "-y", "--no-install-recommends", "nginx-light"], say),
    // Newer Debian releases fold nginx-light into nginx.
    () => run("apt-get", ["install", "-y", "--no-install-recommends", "nginx"], say),
  ];
  for (const attempt of attempts) {
    if (attempt() && findNginx()) break;
  }
  const installed = findNginx();
  if (!installed) throw new Error(`installing nginx with apt-get failed (see the output above). Run it by hand and try again:\n    ${NGINX_INSTALL_COMMAND}`);
  say(`nginx installed: ${nginxVersion(installed)}`);
  return installed;
}

/** What `nginx -V` says (on stderr, as nginx prints it): version line and configure arguments. */
export function nginxBuildInfo(binary: string): string {
  const res = spawnSync(binary, ["-V"], { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  return `${res.stdout ?? ""}${res.stderr ?? ""}`;
}

/** `nginx version: nginx/1.22.1` → "nginx/1.22.1". */
export function nginxVersion(binary: string): string {
  return /nginx version: (\S+)/.exec(nginxBuildInfo(binary))?.[1] ?? "unknown version";
}
