/**
 * The `app` of cdktf.json: lets the standard `cdktf synth` flow produce the same stacks as
 * `cts synth`. Reads the config from CTS_CONFIG (default ./cts.config.ts) and the data from Consul,
 * or from the snapshot named by CTS_INPUT. cdktf writes its manifest and stack folders; each
 * stack's JSON is then replaced by the one cts synthesizes (escaped, pinned, sorted).
 */
import { App, TerraformStack } from "cdktf";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { loadConfig } from "../config/load.ts";
import { readFromSnapshot, readSnapshot } from "../synth/snapshot.ts";
import { synthesizeTask } from "../synth/synthesize.ts";
import { taskWorkingDir, workingRoot } from "../synth/paths.ts";
import { assembleInput } from "../task/sources.ts";
import { createConsulReader, warnSkipped } from "../daemon/consul-setup.ts";

const loaded = await loadConfig(process.env.CTS_CONFIG);
const snapshot = process.env.CTS_INPUT ? readSnapshot(process.env.CTS_INPUT) : undefined;
const fromConsul = snapshot ? undefined : createConsulReader(loaded.config);
const app = new App({ skipValidation: true, stackTraces: false });
const root = workingRoot(loaded.dir, loaded.config.driver?.terraform?.workingDir);
const outputs = new Map<string, string>();
for (const task of loaded.config.tasks) {
  const onSkipped = warnSkipped(task.name, (line) => process.stderr.write(`${line}\n`));
  const input = await assembleInput(task, (s) => (fromConsul ? fromConsul(s, onSkipped) : readFromSnapshot(snapshot!, s)));
  const result = synthesizeTask(task, input, {
    backend: loaded.config.driver?.terraform?.backend,
    configDir: loaded.dir,
    taskDir: taskWorkingDir(root, loaded.dir, task),
    providerVersions: loaded.config.driver?.terraform?.providerVersions,
  });
  new TerraformStack(app, task.name);
  outputs.set(task.name, result.json);
}
app.synth();
for (const [name, json] of outputs) writeFileSync(join(app.outdir, "stacks", name, "cdk.tf.json"), json);
