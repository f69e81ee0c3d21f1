/** cdktf context key: directory of the config file (ModuleTask resolves local sources from it). */
export const CONTEXT_CONFIG_DIR = "cts:configDir";
/** cdktf context key: the task's working dir (ModuleTask writes local sources relative to it). */
export const CONTEXT_TASK_DIR = "cts:taskDir";
