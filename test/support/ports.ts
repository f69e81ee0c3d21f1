/** Tests and the demo pick free ports the same way. */
export { freePort } from "../../scripts/demo/ports.ts";
