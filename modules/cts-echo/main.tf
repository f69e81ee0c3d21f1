# A minimal CTS-style module: it declares CTS's `services` variable exactly as CTS modules do and
# writes what it receives to a file, so tests (and users) can see the shape a module gets.
terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = ">= 2.0"
    }
  }
}

variable "services" {
  description = "Consul services monitored by Consul-Terraform-Sync (protocol v0)"
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

variable "output_path" {
  description = "Where to write the services the module received, as JSON"
  type        = string
}

resource "local_file" "services" {
  filename        = var.output_path
  content         = jsonencode(var.services)
  file_permission = "0640"
}
