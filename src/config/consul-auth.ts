/** Problems of a TypeScript config's `consul.auth` (HTTP basic auth). */
export function consulAuthProblems(auth: unknown): Array<{ field: string; message: string }> {
  if (auth === undefined) return [];
  const a = auth as { username?: unknown; password?: unknown } | null;
  if (typeof a !== "object" || a === null || typeof a.username !== "string")
    return [{ field: "consul.auth.username", message: 'must be the HTTP basic auth user name, e.g. auth: { username: "cts", password: process.env.CONSUL_PASSWORD }.' }];
  if (a.password !== undefined && typeof a.password !== "string") return [{ field: "consul.auth.password", message: "must be a string (e.g. from process.env)." }];
  return [];
}
