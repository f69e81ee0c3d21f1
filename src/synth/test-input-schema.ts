import { z } from "zod";
import type { CatalogNode, Intention, ServiceInstance } from "../consul/types.ts";
import { strict, value, type ShapeOf } from "../task/strict-options.ts";
import type { CheckInput, InstanceInput } from "./snapshot.ts";
import type { IntentionInput, NodeInput } from "./snapshot-lists.ts";

// The keys of what a unit test hands `Testing` (src/testing.ts): an instance's `tag` for `tags`
// would otherwise leave the instance untagged, and the test would pass on data Consul never holds.
// Loaded with the public entry only (zod), like the option schemas.

export const checkInput = strict({ id: value(), name: value(), status: value() } satisfies ShapeOf<CheckInput>);

const instanceFields = {
  id: value(),
  name: value(),
  kind: value(),
  address: value(),
  port: value(),
  meta: value(),
  tags: value(),
  namespace: value(),
  status: value(),
  node: value(),
  nodeId: value(),
  nodeAddress: value(),
  nodeDatacenter: value(),
  nodeTaggedAddresses: value(),
  nodeMeta: value(),
  ctsUserDefinedMeta: value(),
  peer: value(),
  partition: value(),
} satisfies ShapeOf<ServiceInstance>;
/** A service instance of a test's input: an instance's fields and its checks. */
export const instanceInput = strict({
  ...instanceFields,
  checks: z.array(checkInput).optional(),
  nodeChecks: z.array(checkInput).optional(),
  nodeStatus: value(),
  maintenance: value(),
  nodeMaintenance: value(),
} satisfies ShapeOf<InstanceInput>);

export const nodeInput = strict({
  id: value(),
  node: value(),
  address: value(),
  datacenter: value(),
  taggedAddresses: value(),
  meta: value(),
  partition: value(),
} satisfies ShapeOf<CatalogNode> & ShapeOf<NodeInput>);

export const intentionInput = strict({
  sourceName: value(),
  sourceNamespace: value(),
  sourcePartition: value(),
  sourcePeer: value(),
  sourceSamenessGroup: value(),
  sourceType: value(),
  destinationName: value(),
  destinationNamespace: value(),
  destinationPartition: value(),
  action: value(),
  permissions: value(),
  precedence: value(),
  description: value(),
  meta: value(),
} satisfies ShapeOf<Intention> & ShapeOf<IntentionInput>);

/** The lists of a test's input whose items are checked (`TestInput`'s own keys: src/testing.ts). */
export const TEST_INPUT_ITEM_SCHEMAS = {
  InstanceInput: instanceInput,
  CheckInput: checkInput,
  NodeInput: nodeInput,
  IntentionInput: intentionInput,
} as const;
