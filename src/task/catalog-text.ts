import { currentCdk } from "../cdktf/load.ts";

/**
 * A live Terraform expression for task code, e.g. `expression("path.module")`, as a string token.
 * Every other string a task writes is literal text in the synthesized Terraform (a `${` typed into
 * a string included); references, `Fn.*` and this are the live parts. Never pass catalog data here.
 */
export function expression(hcl: string): string {
  // Of the library the running synthesis uses: a cdktf expression in a cdktn task is refused.
  const { Token, ref } = currentCdk() as unknown as { Token: { asString(v: unknown): string }; ref(identifier: string): unknown };
  return Token.asString(ref(hcl));
}

/**
 * @deprecated Catalog strings reach task code exactly as Consul holds them; this returns `s`.
 * Kept so tasks written for cts 0.1's encoded strings keep compiling.
 */
export function raw(s: string): string {
  return s;
}

/**
 * @deprecated Catalog data needs no re-marking: every string a task writes is literal text in the
 * synthesized Terraform. Returns `value`.
 */
export function untrusted<T>(value: T): T {
  return value;
}
