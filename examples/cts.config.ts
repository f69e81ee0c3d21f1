// The demo's configuration: an nginx pool kept equal to the passing `web` instances (a task class)
// and a firewall allow-list of the `public` services (an unchanged CTS module). `npm run demo`
// starts Consul, nginx and the web instances, then runs `cts watch --config examples/cts.config.ts`
// with CTS_DEMO_DIR and the tool paths in the environment (see demo-environment.ts). The daemon
// finds Consul through CONSUL_HTTP_ADDR, as CTS does.
import { defineConfig } from "cdktf-sync";
import { demoEnvironment } from "./demo-environment.ts";
import { publicAllowList } from "./firewall/allow-list.ts";
import { NginxUpstreamPool } from "./load-balancer/nginx-upstream-pool.ts";

const demo = demoEnvironment();

export default defineConfig({
  id: "cts-demo",
  driver: {
    terraform: {
      binary: demo.tofu,
      ...(demo.cliConfig ? { cliConfigFile: demo.cliConfig } : {}),
      // State stays in Consul KV (CTS's default backend), so it goes away with the dev agent.
      workingDir: demo.workingDir,
    },
  },
  // Short quiet time: health checks that flip together land in one run, and the demo stays snappy.
  bufferPeriod: { min: "200ms", max: "1s" },
  api: { address: "127.0.0.1", port: demo.apiPort },
  tasks: [
    new NginxUpstreamPool({
      name: "web-lb",
      service: "web",
      dir: demo.upstreamDir,
      nginx: { binary: demo.nginx, prefix: demo.nginxPrefix, conf: demo.nginxConf, errorLog: demo.nginxErrorLog },
    }),
    publicAllowList({ name: "allow-list", outputDir: demo.firewallDir }),
  ],
});
