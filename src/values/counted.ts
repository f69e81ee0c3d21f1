/** A count with its noun in the right number: `counted(1, "query", "queries")` → "1 query", `counted(2, "task")` → "2 tasks". */
export function counted(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
