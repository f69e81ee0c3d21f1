import { readdir } from "node:fs/promises";
import { create } from "tar";

// What TFC's default .terraformignore leaves out: provider caches and VCS metadata are no configuration.
const IGNORED = /(^|\/)(\.git|\.terraform)(\/|$)|(^|\/)terraform\.tfstate(\.backup)?$/;

/**
 * A directory as the tar.gz a configuration version uploads: sorted entries, portable headers and
 * a fixed mtime, so the same files give the same bytes. `.terraform/`, `.git/` and local state
 * files are left out.
 */
export async function packDirectory(dir: string): Promise<Buffer> {
  const entries = (await readdir(dir)).filter((name) => !IGNORED.test(name)).sort();
  const chunks: Buffer[] = [];
  const pack = create({ gzip: true, cwd: dir, portable: true, mtime: new Date(0), filter: (path) => !IGNORED.test(path.replace(/^\.\//, "")) }, entries);
  for await (const chunk of pack) chunks.push(Buffer.from(chunk as Uint8Array));
  return Buffer.concat(chunks);
}
