import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * Root modules the TFC tests upload. `file`: writes `var.content` (and the HCL map `var.extra`) to
 * `var.filename` with hashicorp/local, outputs the content; `var.greeting` may come from the
 * environment as TF_VAR_greeting (an env-category variable). `broken`: fails in plan. `slow`: a
 * provisioner runs `sleep <marker>` (a process to find and to see gone). `home`: writes the run's
 * $HOME to a file.
 */
export async function rootModule(kind: "file" | "broken" | "slow" | "home", opts: { marker?: number } = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), `cts-tfc-module-${kind}-`));
  const text = {
    file: `terraform {
  required_providers {
    local = { source = "hashicorp/local" }
  }
}
variable "filename" { type = string }
variable "content" { type = string }
variable "extra" {
  type    = map(string)
  default = {}
}
variable "greeting" {
  type    = string
  default = "none"
}
variable "secret" {
  type      = string
  default   = ""
  sensitive = true
}
resource "local_file" "out" {
  filename = var.filename
  content  = "\${var.content}|\${jsonencode(var.extra)}|\${var.greeting}|\${nonsensitive(length(var.secret))}"
}
output "content" { value = local_file.out.content }
output "secret" {
  value     = var.secret
  sensitive = true
}
`,
    broken: `resource "terraform_data" "x" {
  input = var.not_declared
}
`,
    slow: `variable "filename" { type = string }
resource "terraform_data" "slow" {
  provisioner "local-exec" {
    command = "echo started > \${var.filename}; sleep ${opts.marker ?? 3217}"
  }
}
`,
    home: `variable "filename" { type = string }
resource "terraform_data" "home" {
  provisioner "local-exec" {
    command = "printf '%s' \\"$HOME\\" > \${var.filename}"
  }
}
`,
  }[kind];
  await writeFile(join(dir, "main.tf"), text);
  return dir;
}
