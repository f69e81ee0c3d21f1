import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { commandEnv } from "../../src/terraform/env.ts";

describe("Terraform command environment", () => {
  const inherited = { PATH: "/bin", TF_CLI_ARGS: "-lock=false", TF_CLI_ARGS_apply: "-parallelism=1", TF_WORKSPACE: "other", TF_CLI_CONFIG_FILE: "/does/not/exist" };

  it("drops inherited variables that would change our flags or workspace", () => {
    const env = commandEnv({ inherited });
    assert.equal(env.PATH, "/bin");
    for (const k of ["TF_CLI_ARGS", "TF_CLI_ARGS_apply", "TF_WORKSPACE", "TF_CLI_CONFIG_FILE"]) assert.equal(env[k], undefined, k);
  });

  it("layers base env, task env and the driver's settings, in that order", () => {
    const env = commandEnv({
      inherited,
      base: { CONSUL_HTTP_ADDR: "127.0.0.1:1", CONSUL_HTTP_TOKEN: "base" },
      task: { CONSUL_HTTP_TOKEN: "task", TF_INPUT: "1" },
      cliConfigFile: "/etc/cts/tofu.rc",
      pluginCacheDir: "/var/cache/cts",
      workspace: "web",
    });
    assert.equal(env.CONSUL_HTTP_ADDR, "127.0.0.1:1");
    assert.equal(env.CONSUL_HTTP_TOKEN, "task");
    assert.equal(env.TF_CLI_CONFIG_FILE, "/etc/cts/tofu.rc");
    assert.equal(env.TF_PLUGIN_CACHE_DIR, "/var/cache/cts");
    assert.equal(env.TF_WORKSPACE, "web");
    assert.equal(env.TF_INPUT, "0", "never prompts, whatever a task sets");
    assert.equal(env.TF_IN_AUTOMATION, "1");
    assert.equal(env.CHECKPOINT_DISABLE, "1");
  });
});
