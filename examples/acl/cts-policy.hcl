# Least-privilege ACL policy for the cts daemon and the Terraform it runs (Consul backend).
# Create it with:  consul acl policy create -name cts -rules @examples/acl/cts-policy.hcl
#                  consul acl token create -policy-name cts -description "cts daemon"

# Watching: health and catalog of the services tasks use (narrow the prefixes to your services).
service_prefix "" {
  policy = "read"
}
node_prefix "" {
  policy = "read"
}

# cts's own conditions and inputs: nodes need the node_prefix read above; intentions need
# intentions = "read" added to the service_prefix block above; config entries need the read rule of
# their kind (the service read above for service-defaults, -resolver, -router, -splitter and
# gateways; intentions = "read" for service-intentions; mesh = "read" for exported-services and
# api-gateway; proxy-defaults and mesh need none). Uncomment what your tasks watch:
# mesh = "read"

# KV conditions and inputs read their keys (narrow to the prefixes your tasks watch).
key_prefix "" {
  policy = "read"
}

# Terraform state (consul backend): read/write/list under the state path, including the lock.
key_prefix "consul-terraform-sync/" {
  policy = "write"
}

# The consul backend locks state with a session; high availability holds a session too.
session_prefix "" {
  policy = "write"
}

# Self-registration of the daemon in the catalog.
service "consul-terraform-sync" {
  policy = "write"
}
