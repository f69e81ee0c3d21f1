// Worker threads do not inherit the parent's tsx hooks: register them here, then load the worker.
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
