// `node --import tsx --import cdktf-sync/register --test test/*.test.ts` (the test script `cts init`
// writes): a task author's own tests load provider bindings as cts loads them, so a root import of
// a big binding (`import * as aws from "@cdktf/provider-aws"`) costs what the task uses there too.
import { registerLazyBindings } from "./cdktf/lazy-bindings.ts";

registerLazyBindings();
