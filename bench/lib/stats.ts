/** Summary statistics of one series of measurements (all in the series' unit, usually ms). */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentile of an ascending array (p in 0..100). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

/** Median, p95, p99 and friends. With fewer than 100 samples p99 is simply the largest or second largest value. */
export function summarize(values: readonly number[]): Summary {
  const s = [...values].sort((a, b) => a - b);
  const mean = s.reduce((a, b) => a + b, 0) / (s.length || 1);
  return { n: s.length, min: s[0] ?? NaN, p50: percentile(s, 50), p95: percentile(s, 95), p99: percentile(s, 99), max: s[s.length - 1] ?? NaN, mean };
}

/** Median of a series. */
export function median(values: readonly number[]): number {
  return percentile([...values].sort((a, b) => a - b), 50);
}

/** Rounds for JSON output (keeps files small and diffs readable). */
export function round(x: number, digits = 1): number {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** A summary with every number rounded. */
export function rounded(s: Summary, digits = 1): Summary {
  return { n: s.n, min: round(s.min, digits), p50: round(s.p50, digits), p95: round(s.p95, digits), p99: round(s.p99, digits), max: round(s.max, digits), mean: round(s.mean, digits) };
}

/** "12.3 ms", "1.23 s". */
export function ms(x: number): string {
  if (!Number.isFinite(x)) return "–";
  if (x >= 10_000) return `${(x / 1000).toFixed(1)} s`;
  if (x >= 1000) return `${(x / 1000).toFixed(2)} s`;
  if (x >= 100) return `${x.toFixed(0)} ms`;
  if (x >= 10) return `${x.toFixed(1)} ms`;
  return `${x.toFixed(2)} ms`;
}

/** "1.5 MB", "820 KB", "96 B". */
export function bytes(x: number): string {
  if (!Number.isFinite(x)) return "–";
  if (x >= 1024 * 1024) return `${(x / 1024 / 1024).toFixed(1)} MB`;
  if (x >= 1024) return `${(x / 1024).toFixed(0)} KB`;
  return `${x} B`;
}

/** "1.23×". */
export function ratio(x: number): string {
  return Number.isFinite(x) ? `${x.toFixed(2)}×` : "–";
}

/** Sleeps ms. */
export const sleep = (msec: number) => new Promise<void>((r) => setTimeout(r, msec));
