/**
 * cts: Consul-Terraform-Sync with tasks as TypeScript classes. This module is the whole public
 * surface for task authors and config files.
 */
// Task, ModuleTask, the condition factories and defineConfig refuse option keys they do not take (task/checked.ts).
export { Task, ModuleTask, services, catalogServices, consulKv, nodes, intentions, configEntries, schedule } from "./task/checked.ts";
export type { TaskOptions, TaskInput, TaskScope, BufferPeriodOption, DriftCheckOption, UpstreamOutputs } from "./task/task.ts";
export type { ModuleTaskOptions, ModuleProvider } from "./task/module-task.ts";
export type { PlanGuards, PlanJson, PlanResourceChange, PlanPredicate, ApprovalMode } from "./task/guards.ts";
export {
  type Condition,
  type ServicesCondition,
  type ServicesOptions,
  type CatalogServicesCondition,
  type ConsulKvCondition,
  type ScheduleCondition,
  type TaskInputs,
} from "./task/conditions.ts";
export type { ServicesTrigger, CountThreshold } from "./task/service-trigger.ts";
// cts's own conditions and inputs: catalog nodes, service intentions, config entries.
export type { NodesCondition, IntentionsCondition, ConfigEntriesCondition } from "./task/conditions.ts";
export type { CatalogNode, Intention, ConfigEntry, NodesQuery, IntentionsQuery, ConfigEntriesQuery } from "./consul/types.ts";
export type { ModuleNode, ModuleIntention } from "./task/module-protocol.ts";
export type { NodeInput, IntentionInput } from "./testing.ts";
export { constructId } from "./task/ids.ts";
export { secret, type SecretSource } from "./task/secrets.ts";
export { vaultSecret, consulKey, type TemplateValue } from "./task/provider-templates.ts";
export { toCtsServices, ctsServiceKey, type CtsService } from "./task/module-protocol.ts";
export type { ServiceInstance, CatalogServices, KvPairs, ServicesQuery, CatalogServicesQuery, KvQuery } from "./consul/types.ts";
export { fromCtsConfig, readCtsConfig } from "./cts/config/load.ts";
export { defineConfig } from "./config/define-config.ts";
export type { CtsConfig, ConsulConfig, ConsulTlsConfig, ServiceRegistrationConfig, TerraformDriverConfig, ApiConfig, VaultConfig } from "./config/types.ts";
export { render, TEMPLATES_DIR } from "./values/render.ts";
export { expression, raw, untrusted } from "./task/catalog-text.ts";
export { Testing, type TestInput, type InstanceInput, type CheckInput } from "./testing.ts";
export type { ExpectedProperties, FoundResource, SynthesizedJson } from "./assertions.ts";
export { CtsError } from "./errors/cts-error.ts";
export { verifySignature as verifyWebhookSignature } from "./notify/signature.ts";
export type { Notification as WebhookNotification, NotificationDetail as WebhookNotificationDetail } from "./notify/notification.ts";
export type { NotificationKind, NotificationsConfig, WebhookConfig } from "./config/notifications.ts";
