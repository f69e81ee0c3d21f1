import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { ApiError } from "../../src/api/http-error.ts";
import { createApiServer, type ApiServer } from "../../src/api/server.ts";
import type { ApiController } from "../../src/api/deps.ts";
import { specToCts } from "../../src/cts/api/shape.ts";
import { decodeCreateRequest } from "../../src/cts/api/decode.ts";
import { parseCreateBody } from "../../src/api/task-request.ts";
import { createLogger } from "../../src/log/logger.ts";
import { EventStore } from "../../src/runtime/events.ts";
import type { TaskView } from "../../src/runtime/controller.ts";
import type { ModuleTaskSpec } from "../../src/synth/task-ref.ts";
import { http } from "../support/api.ts";

const TFC = { driver: "terraformCloud" } as const;

/** A task body as CTS's Go client marshals it (oapigen.Task: omitempty pointer fields). */
function body(extra: Record<string, unknown>) {
  return { task: { name: "web", module: "./m", condition: { services: { names: ["web"] } }, ...extra } };
}

function refused(fn: () => unknown, message: RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 400);
    assert.match(err.message, message);
    return true;
  });
}

describe("task create with CTS's terraform_cloud_workspace and terraform_version", () => {
  describe("under the Terraform Cloud driver", () => {
    it("takes the block as CTS's client sends it into the task's workspace settings", () => {
      const spec = parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: "agent", agent_pool_name: "pool", terraform_version: "1.5.7" } }), TFC);
      assert.deepEqual(spec.terraformCloudWorkspace, { executionMode: "agent", agentPoolName: "pool", terraformVersion: "1.5.7" });
      const remote = parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: "remote" } }), TFC);
      assert.deepEqual(remote.terraformCloudWorkspace, { executionMode: "remote" });
    });

    it("takes the deprecated task terraform_version; the block's version wins over it", () => {
      assert.deepEqual(parseCreateBody(body({ terraform_version: "1.4.6" }), TFC).terraformCloudWorkspace, { terraformVersion: "1.4.6" });
      const both = parseCreateBody(body({ terraform_version: "1.4.6", terraform_cloud_workspace: { terraform_version: "1.5.7" } }), TFC);
      assert.deepEqual(both.terraformCloudWorkspace, { terraformVersion: "1.5.7" });
    });

    it("treats empty strings and an empty block as unset (CTS's IsEmpty)", () => {
      const spec = parseCreateBody(body({ terraform_version: "", terraform_cloud_workspace: { execution_mode: "", agent_pool_id: "", agent_pool_name: "", terraform_version: "" } }), TFC);
      assert.equal(spec.terraformCloudWorkspace, undefined);
      assert.equal(parseCreateBody(body({ terraform_cloud_workspace: {} }), TFC).terraformCloudWorkspace, undefined);
    });

    it("matches the block's keys case-insensitively, as CTS's server does", async () => {
      const decoded = await decodeCreateRequest({ Task: { ...body({}).task, Terraform_Cloud_Workspace: { Execution_Mode: "agent", Agent_Pool_ID: "apool-1" }, Terraform_Version: "1.5.7" } });
      assert.deepEqual(parseCreateBody(decoded, TFC).terraformCloudWorkspace, { executionMode: "agent", agentPoolId: "apool-1", terraformVersion: "1.5.7" });
    });

    it("refuses what CTS's rules refuse, with CTS's message and the fix", () => {
      const ws = (b: Record<string, unknown>) => () => parseCreateBody(body({ terraform_cloud_workspace: b }), TFC);
      refused(ws({ execution_mode: "local" }), /task\.terraform_cloud_workspace\.execution_mode: execution mode 'local' not supported for CTS, use 'remote' or 'agent' instead\. Set "execution_mode"/);
      refused(ws({ execution_mode: "agent" }), /task\.terraform_cloud_workspace\.execution_mode: agent_pool_id or agent_pool_name is required if execution mode is 'agent'\. Add "agent_pool_id"/);
      refused(ws({ execution_mode: "remote", agent_pool_id: "apool-1" }), /task\.terraform_cloud_workspace\.agent_pool_id: agent pool configured when execution mode is not 'agent'\./);
      refused(ws({ agent_pool_name: "pool" }), /task\.terraform_cloud_workspace\.agent_pool_name: agent pool configured when execution mode is not 'agent'\./);
      refused(ws({ terraform_version: "invalid" }), /task\.terraform_cloud_workspace\.terraform_version: Malformed version: invalid\. Send an exact version x\.y\.z within >= 0\.13\.0, <= 1\.14\.3\./);
      refused(ws({ terraform_version: "1.5" }), /provide the exact Terraform version to install: 1\.5\./);
      refused(ws({ terraform_version: "0.12.0" }), /Terraform version is not supported by Consul-Terraform-Sync.*: 0\.12\.0\./);
      refused(() => parseCreateBody(body({ terraform_version: "0.12.31" }), TFC), /task\.terraform_version: Terraform version is not supported by Consul-Terraform-Sync/);
    });

    it("refuses a setting that is not a string and a key CTS does not have", () => {
      refused(() => parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: 1 } }), TFC), /task\.terraform_cloud_workspace\.execution_mode must be a string \(got 1\)/);
      refused(() => parseCreateBody(body({ terraform_cloud_workspace: { workspace: "x" } }), TFC), /task\.terraform_cloud_workspace\.workspace/);
      refused(() => parseCreateBody(body({ terraform_cloud_workspace: "agent" }), TFC), /task\.terraform_cloud_workspace must be an object/);
      refused(() => parseCreateBody(body({ terraform_version: 1.5 }), TFC), /task\.terraform_version must be a string/);
    });

    it("echoes the settings in CTS's shape, so a PATCH keeps them", () => {
      const spec = parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: "agent", agent_pool_id: "apool-1" }, terraform_version: "1.5.7" }), TFC);
      assert.deepEqual(specToCts(spec).terraform_cloud_workspace, { execution_mode: "agent", agent_pool_id: "apool-1", terraform_version: "1.5.7" });
      assert.equal("terraform_cloud_workspace" in specToCts(parseCreateBody(body({}), TFC)), false, "absent when nothing is set");
    });
  });

  describe("under the local driver (the default)", () => {
    it("refuses a non-empty block or terraform_version with 400, naming the field and the fix", () => {
      refused(() => parseCreateBody(body({ terraform_version: "1.5.7" })), /task\.terraform_version is only valid with the Terraform Cloud driver \(as in CTS\)\. Remove it, or configure driver\.terraformCloud/);
      refused(() => parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: "remote" } }), { driver: "terraform" }), /task\.terraform_cloud_workspace is only valid with the Terraform Cloud driver/);
    });

    it("accepts the empty block CTS's client may send (CTS (OSS) accepts the default one)", () => {
      assert.equal(parseCreateBody(body({ terraform_cloud_workspace: { execution_mode: "" }, terraform_version: "" })).terraformCloudWorkspace, undefined);
    });
  });
});

describe("POST /v1/tasks with terraform_cloud_workspace (fake controller)", () => {
  const servers: ApiServer[] = [];
  const added: ModuleTaskSpec[] = [];
  const urls: Record<string, string> = {};

  function controller(): ApiController {
    const views = new Map<string, TaskView>();
    const events = new EventStore();
    return {
      events,
      taskNames: () => [...views.keys()],
      view: (n: string) => views.get(n),
      addModuleTask: (spec: ModuleTaskSpec) => {
        added.push(spec);
        views.set(spec.name, {
          name: spec.name,
          description: "",
          enabled: true,
          origin: "api",
          status: events.status(spec.name),
          condition: spec.condition,
          inputs: {},
          bufferPeriod: { enabled: true, min: 5000, max: 20000 },
          running: false,
          className: "ModuleTask",
          module: spec.module,
          spec,
        });
        return undefined as never;
      },
    } as unknown as ApiController;
  }

  before(async () => {
    for (const driver of ["terraform", "terraformCloud"] as const) {
      const server = createApiServer({ controller: controller(), log: createLogger({ level: "error" }), driver });
      servers.push(server);
      urls[driver] = (await server.listen(0)).url;
    }
  });
  after(async () => {
    for (const s of servers) await s.close();
  });

  it("the Terraform Cloud daemon creates the task with its workspace settings and answers them back", async () => {
    const res = await http(urls.terraformCloud!, "POST", "/v1/tasks", body({ terraform_cloud_workspace: { execution_mode: "agent", agent_pool_name: "pool" }, terraform_version: "1.5.7" }));
    assert.equal(res.status, 201, JSON.stringify(res.body));
    assert.deepEqual(added.at(-1)?.terraformCloudWorkspace, { executionMode: "agent", agentPoolName: "pool", terraformVersion: "1.5.7" });
    assert.deepEqual((res.body.task as Record<string, unknown>).terraform_cloud_workspace, { execution_mode: "agent", agent_pool_name: "pool", terraform_version: "1.5.7" });
    const bad = await http(urls.terraformCloud!, "POST", "/v1/tasks", { task: { ...body({}).task, name: "other", terraform_cloud_workspace: { execution_mode: "agent" } } });
    assert.equal(bad.status, 400);
    assert.match(JSON.stringify(bad.body.error), /agent_pool_id or agent_pool_name is required if execution mode is 'agent'/);
  });

  it("the local daemon refuses them with 400 and creates nothing", async () => {
    const before = added.length;
    const res = await http(urls.terraform!, "POST", "/v1/tasks", body({ terraform_cloud_workspace: { execution_mode: "remote" } }));
    assert.equal(res.status, 400);
    assert.match(JSON.stringify(res.body.error), /terraform_cloud_workspace is only valid with the Terraform Cloud driver/);
    assert.equal(added.length, before);
  });
});
