/** Small HTTP servers answering with their id, and their Consul registration (shared with the demo). */
export { startWebInstance, webRegistration, type WebInstance } from "../../scripts/demo/web-instances.ts";
