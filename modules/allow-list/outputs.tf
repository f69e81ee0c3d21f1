output "allowed" {
  description = "The instances allowed, as name/id"
  value       = [for r in local.rules : "${r.service}/${r.id}"]
}

output "rules_file" {
  description = "Path of the nftables rules file"
  value       = local_file.rules.filename
}
