/**
 * Terraform's plan text (`tofu show` of a plan, as `cts inspect` prints it) cut into one section
 * per resource: what `cts diff --plan` shows under each address, Terraform's own rendering of the
 * values (sensitive ones as Terraform hides them, registered secrets already redacted by the driver).
 */

/** The lines of each of `addresses` in `output` (its `# <address> will be …` line first, two spaces less indented). */
export function planSections(output: string, addresses: string[]): Map<string, string[]> {
  // The longest first: `a.b` must not take the header of `a.b["x"]`.
  const known = [...addresses].sort((a, b) => b.length - a.length);
  const sections = new Map<string, string[]>();
  let current: string[] | undefined;
  for (const line of output.split("\n")) {
    const header = /^ {2}# (.*)$/.exec(line);
    const address = header ? known.find((a) => header[1]!.startsWith(`${a} `)) : undefined;
    if (address) {
      current = [];
      if (!sections.has(address)) sections.set(address, current);
      else current = undefined;
    } else if (/^\S/.test(line)) current = undefined;
    current?.push(line.replace(/^ {2}/, "").trimEnd());
  }
  for (const lines of sections.values()) while (lines.length && lines[lines.length - 1] === "") lines.pop();
  return sections;
}
