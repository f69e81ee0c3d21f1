# allow-list: a CTS-compatible module that turns the Consul services tagged "public" into an
# inbound allow-list: an nftables rules file (load it with `nft -f`) and the same policy as JSON.
terraform {
  required_providers {
    local = {
      source  = "hashicorp/local"
      version = ">= 2.0"
    }
  }
}

locals {
  # Catalog data is untrusted and the rules file is a language: only instances whose address is an
  # IP literal (cidrhost() parses it, nothing else passes) and whose port is a real port become
  # rules. Names and ids are reduced to safe characters before they reach a rule's comment.
  allowed = {
    for key, s in var.services : key => s
    if contains(s.tags, var.tag) && s.port >= 1 && s.port <= 65535 &&
    can(cidrhost("${s.address}/${length(regexall(":", s.address)) > 0 ? 128 : 32}", 0))
  }

  rules = [
    for key in sort(keys(local.allowed)) : {
      family  = length(regexall(":", local.allowed[key].address)) > 0 ? "ip6" : "ip"
      address = local.allowed[key].address
      port    = local.allowed[key].port
      service = local.allowed[key].name
      id      = local.allowed[key].id
      label   = substr(replace("${local.allowed[key].name}/${local.allowed[key].id}", "/[^A-Za-z0-9_.:@/-]/", "_"), 0, 120)
    }
  ]

  skipped = length([for key, s in var.services : key if contains(s.tags, var.tag)]) - length(local.rules)
}

resource "local_file" "rules" {
  filename             = "${var.output_dir}/allow-list.nft"
  file_permission      = "0640"
  directory_permission = "0750"
  content = templatefile("${path.module}/allow-list.nft.tftpl", {
    table   = var.table_name
    tag     = var.tag
    rules   = local.rules
    skipped = local.skipped
  })
}

resource "local_file" "policy" {
  filename             = "${var.output_dir}/allow-list.json"
  file_permission      = "0640"
  directory_permission = "0750"
  content = jsonencode({
    tag = var.tag
    allow = [
      for r in local.rules : {
        service  = r.service
        id       = r.id
        address  = r.address
        port     = r.port
        protocol = "tcp"
      }
    ]
  })
}
