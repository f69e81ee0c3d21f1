import { tmpdir } from "node:os";
import { defaultCdk } from "../cdktf/cdk-library.ts";
import { withLiteralTable } from "../cdktf/cdktf-literals.ts";
import { cdk } from "../cdktf/load.ts";
import { withTokenScope } from "./token-scope.ts";

/**
 * Loads the CDK the config's tasks use (cdktn when only cdktn is loaded, else cdktf) with cts's
 * literal-text hooks, and synthesizes a small stack of cts's own (a variable, references, a
 * function, an output) so that the code every synthesis runs is compiled before a task needs it:
 * the first synthesis in a new worker took 200–350 ms, the next ones a few. No code of the task
 * runs here: a task's `synthesize()` may print or read things, and its output must only ever
 * come with real data.
 */
export function warmUpCdk(): void {
  const name = defaultCdk();
  const { App, TerraformStack, TerraformVariable, TerraformOutput, TerraformLocal, Fn } = cdk(name);
  withTokenScope(() =>
    withLiteralTable(name, () => {
      const app = new App({ outdir: tmpdir(), stackTraces: false, skipValidation: true, skipBackendValidation: true });
      const stack = new TerraformStack(app, "cts-warm-up");
      const names = new TerraformVariable(stack, "names", { type: "list(string)", default: ["a", "b"] });
      const joined = new TerraformLocal(stack, "joined", Fn.join(",", names.listValue));
      new TerraformOutput(stack, "out", { value: `${joined.asString} ${Fn.upper("literal ${text}")}` });
      stack.prepareStack();
      stack.toTerraform();
    }),
  );
}
