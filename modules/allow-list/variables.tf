# The `services` variable exactly as Consul-Terraform-Sync (protocol v0) passes it: a map keyed
# `id.node.namespace.datacenter` of every instance the task's condition selected. Any CTS module
# declares it this way, and so any CTS module runs unchanged as a cts ModuleTask.
variable "services" {
  description = "Consul services monitored by Consul-Terraform-Sync"
  type = map(
    object({
      id                    = string
      name                  = string
      kind                  = string
      address               = string
      port                  = number
      meta                  = map(string)
      tags                  = list(string)
      namespace             = string
      status                = string
      node                  = string
      node_id               = string
      node_address          = string
      node_datacenter       = string
      node_tagged_addresses = map(string)
      node_meta             = map(string)
      cts_user_defined_meta = map(string)
    })
  )
}

variable "output_dir" {
  description = "The only directory the module writes to: allow-list.nft (nftables rules) and allow-list.json (the same policy as data)"
  type        = string
}

variable "tag" {
  description = "Only instances carrying this tag are allowed (filtered here too, so the module is safe under a condition without a filter)"
  type        = string
  default     = "public"
}

variable "table_name" {
  description = "nftables table the rules live in (replaced as a whole on every load)"
  type        = string
  default     = "cts_allow_list"

  validation {
    condition     = can(regex("^[A-Za-z_][A-Za-z0-9_]{0,63}$", var.table_name))
    error_message = "table_name must be a plain identifier (letters, digits, underscore)."
  }
}
