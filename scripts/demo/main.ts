// `npm run demo`: cts keeping an nginx pool and a firewall allow-list in sync with Consul, on this
// machine, with nothing faked. See examples/README.md.
import { rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { nginxVersion, ensureNginx } from "./nginx-install.ts";
import { Demo, DemoStopped, EXAMPLES_CONFIG } from "./demo.ts";
import { printStep, say, style } from "./print.ts";
import { prepareCatalog, STEPS } from "./scenario.ts";
import { demoTools } from "./tools.ts";

const USAGE = `usage: npm run demo [-- --once] [-- --verbose]
  --once      run the walk-through, then stop everything and exit (exit code 0 = it all worked)
  --verbose   also print every line the cts daemon logs
Without --once the demo keeps running after the walk-through until Ctrl-C.`;

// A closed stdout (the terminal went away, a pipe reader died on Ctrl-C) must not kill the driver
// before it has stopped what it started.
for (const stream of [process.stdout, process.stderr]) stream.on("error", () => undefined);

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes("-h") || args.includes("--help")) {
    say(USAGE);
    return 0;
  }
  const unknown = args.filter((a) => !["--once", "--verbose"].includes(a));
  if (unknown.length) {
    process.stderr.write(`unknown option ${unknown.join(" ")}\n${USAGE}\n`);
    return 2;
  }
  const once = args.includes("--once");
  const verbose = args.includes("--verbose");
  const t0 = Date.now();

  say(style.bold("cts demo: Consul → cts → Terraform → nginx and a firewall allow-list"));
  const tools = demoTools();
  const nginx = ensureNginx((line) => say(style.dim(line)));
  say(style.dim(`tools: ${tools.tofu}, ${tools.consul}, nginx ${nginxVersion(nginx)} (${nginx})`));

  const demo = new Demo({ tools, nginx, ...(verbose ? { echoDaemon: (l: string) => say(style.dim(`  │ ${l}`)) } : {}) });
  let walkedThrough = false;
  let interrupted = false;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals++;
    if (signals === 2) say("Still stopping (cts lets a running Terraform command finish first). Ctrl-C once more to force.");
    if (signals >= 3) {
      // Forced: our children's process groups get SIGKILL from the exit hook in processes.ts.
      say(`Forced stop; removing ${demo.dir}. A Terraform command cts had started may still be finishing.`);
      if (demo.dir) rmSync(demo.dir, { recursive: true, force: true });
      process.exit(130);
    }
    if (interrupted) return;
    interrupted = true;
    say(`\n${signal}: stopping everything the demo started…`);
    // The step in flight may be waiting on a timer: exit from here once everything is stopped.
    void shutdown(demo).then((ok) => process.exit(!ok ? 1 : walkedThrough ? 0 : 130));
  };
  process.on("SIGINT", onSignal);
  process.on("SIGTERM", onSignal);

  try {
    await demo.start();
    say(`temp dir   ${demo.dir}`);
    say(`consul     ${demo.consul!.url}/ui/   (dev agent)`);
    say(`nginx      ${demo.nginx!.url}/   (upstream file ${demo.env.upstreamDir}/upstream-web.conf)`);
    await prepareCatalog(demo);
    say(`web        ${[...demo.web.values()].map((w) => `${w.id}=127.0.0.1:${w.port}`).join("  ")}   (HTTP check every 1 s)`);
    say(`cts        cts watch --config ${EXAMPLES_CONFIG}   (log: ${demo.logFile})`);
    for (const [i, run] of STEPS.entries()) printStep(i + 1, STEPS.length, await run(demo));

    const daemon = demo.daemon!;
    say("");
    say(style.bold("The files the tasks keep:"));
    say(style.dim(`── ${demo.env.upstreamDir}/upstream-web.conf`));
    say((await readFile(`${demo.env.upstreamDir}/upstream-web.conf`, "utf8")).trimEnd());
    say(style.dim(`── ${demo.env.firewallDir}/allow-list.nft`));
    say((await demo.rulesFile()).trimEnd());
    const api = (await daemon.apiServed())
      ? `${daemon.apiUrl}  (try ${daemon.apiUrl}/v1/status/tasks?include=events)`
      : `${daemon.apiUrl} (not served by this build of cts watch yet; events above come from the daemon's log)`;
    say("");
    say(`API        ${api}`);
    say(style.green(`Walk-through done in ${((Date.now() - t0) / 1000).toFixed(1)} s.`));
    walkedThrough = true;
    if (!once) {
      say("");
      say(style.bold("Still running. Try it yourself:"));
      say(`  curl -s ${demo.nginx!.url}/                                           # which instance answers`);
      say(`  curl -s -X PUT ${demo.consul!.url}/v1/agent/service/deregister/web-1  # and watch it leave the pool`);
      say(`  CONSUL_HTTP_ADDR=${demo.consul!.address} ${tools.consul} catalog services -tags`);
      say(`  tail -f ${demo.logFile}`);
      say("Ctrl-C stops everything and removes the temp dir.");
      // Until Ctrl-C (the handler above exits) or the daemon dies on its own.
      await daemon.process.exited;
      if (interrupted) return new Promise<number>(() => undefined);
      say(style.red(`cts watch exited with code ${daemon.process.child.exitCode}; stopping the demo.`));
      await shutdown(demo);
      return 1;
    }
    return (await shutdown(demo)) ? 0 : 1;
  } catch (e) {
    // After Ctrl-C, failures of the interrupted step are expected: the handler finishes the job.
    if (interrupted || e instanceof DemoStopped) return new Promise<number>(() => undefined);
    process.stderr.write(`${style.red("demo failed:")} ${(e as Error).message}\n`);
    await shutdown(demo);
    return 1;
  }
}

/** Stops everything the demo started and says so; false when something could not be cleaned up. */
async function shutdown(demo: Demo): Promise<boolean> {
  try {
    await demo.stop();
    say(style.dim(`stopped cts, nginx, consul and the web instances; removed ${demo.dir || "nothing"}`));
    return true;
  } catch (e) {
    process.stderr.write(`cleaning up: ${(e as Error).message}\n`);
    return false;
  }
}

main().then(
  (code) => {
    process.exitCode = process.exitCode || code;
  },
  (e: unknown) => {
    process.stderr.write(`demo failed: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  },
);
