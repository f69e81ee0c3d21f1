// The parser moved to src/config/hcl.ts (CTS config files use it too).
export * from "../config/hcl.ts";
