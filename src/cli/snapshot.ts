import { writeFile } from "node:fs/promises";
import type { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import { takeSnapshot } from "../synth/snapshot.ts";
import { allSources } from "../task/sources.ts";
import { createConsulReader, warnSkipped } from "../daemon/consul-setup.ts";
import { selectTasks } from "./synth.ts";
import { say } from "./output.ts";
import { counted } from "../values/counted.ts";

interface SnapshotFlags {
  config?: string;
  out?: string;
}

/** `cts snapshot`: saves the Consul data the config's tasks read, for `cts synth --snapshot` and `cts diff --snapshot` without Consul. */
export function registerSnapshot(program: Command): void {
  program
    .command("snapshot")
    .description("Save the Consul data the config's tasks read (services, catalog, KV) as a JSON snapshot for synth/diff without Consul")
    .argument("[task...]", "only the data these tasks read (default: all)")
    .option("-c, --config <file>", "config file (default ./cts.config.ts)")
    .option("-o, --out <file>", "write the snapshot here (default: stdout)")
    .action(async (names: string[], flags: SnapshotFlags) => {
      const loaded = await loadConfig(flags.config);
      const read = createConsulReader(loaded.config);
      const onSkipped = warnSkipped("snapshot", (line) => process.stderr.write(`${line}\n`));
      const sources = selectTasks(loaded, names).flatMap((t) => allSources(t));
      const text = JSON.stringify(await takeSnapshot(sources, (s) => read(s, onSkipped)), null, 2) + "\n";
      // The snapshot holds what Consul answered, KV values included: readable by its owner only.
      if (flags.out) {
        await writeFile(flags.out, text, { mode: 0o600 });
        say(`wrote ${flags.out}: the answers to ${counted(new Set(sources.map((s) => JSON.stringify(s))).size, "query", "queries")}\n`, process.stderr);
      } else process.stdout.write(text);
    });
}
