/**
 * Cron expressions as CTS accepts them: 5 fields (minute hour day month weekday), 6 (seconds
 * first) or 7 (seconds first, year last). Supports `*`, lists, ranges, steps, month and weekday
 * names, and the shortcuts @yearly @monthly @weekly @daily @hourly. Times are local.
 */
export interface Cron {
  /** The next matching time strictly after `from`. */
  next(from: Date): Date;
}

const SHORTCUTS: Record<string, string> = {
  "@yearly": "0 0 0 1 1 *",
  "@annually": "0 0 0 1 1 *",
  "@monthly": "0 0 0 1 * *",
  "@weekly": "0 0 0 * * 0",
  "@daily": "0 0 0 * * *",
  "@midnight": "0 0 0 * * *",
  "@hourly": "0 0 * * * *",
};
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

interface FieldSpec {
  name: string;
  min: number;
  max: number;
  names?: string[];
  namesFrom?: number;
}
const FIELDS: FieldSpec[] = [
  { name: "seconds", min: 0, max: 59 },
  { name: "minutes", min: 0, max: 59 },
  { name: "hours", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: "day of week", min: 0, max: 7, names: DAYS, namesFrom: 0 },
  { name: "year", min: 1970, max: 2199 },
];

/** Parses a cron expression; throws an Error saying which field is wrong. */
export function parseCron(expr: string): Cron {
  let text = expr.trim();
  text = SHORTCUTS[text.toLowerCase()] ?? text;
  let parts = text.split(/\s+/);
  if (parts.length === 5) parts = ["0", ...parts];
  if (parts.length === 6) parts = [...parts, "*"];
  if (parts.length !== 7) throw new Error(`cron '${expr}' has ${text.split(/\s+/).length} fields; use 5 (min hour dom month dow), 6 (with seconds first) or 7 (with a year last)`);
  const sets = parts.map((p, i) => parseField(p, FIELDS[i]!));
  const [sec, min, hour, dom, mon, dow, year] = sets as [Set<number>, Set<number>, Set<number>, Set<number>, Set<number>, Set<number>, Set<number>];
  if (dow.has(7)) dow.add(0);
  const domStar = parts[3] === "*" || parts[3] === "?";
  const dowStar = parts[5] === "*" || parts[5] === "?";
  const dayMatches = (d: Date) => {
    const a = dom.has(d.getDate());
    const b = dow.has(d.getDay());
    if (domStar && dowStar) return true;
    if (domStar) return b;
    if (dowStar) return a;
    return a || b; // classic cron: either field matches
  };
  return {
    next(from: Date): Date {
      const d = new Date(from.getTime());
      d.setMilliseconds(0);
      d.setSeconds(d.getSeconds() + 1);
      const limit = from.getTime() + 8 * 366 * 24 * 3600 * 1000;
      while (d.getTime() < limit) {
        if (!year.has(d.getFullYear())) {
          d.setFullYear(d.getFullYear() + 1, 0, 1);
          d.setHours(0, 0, 0);
          continue;
        }
        if (!mon.has(d.getMonth() + 1)) {
          d.setMonth(d.getMonth() + 1, 1);
          d.setHours(0, 0, 0);
          continue;
        }
        if (!dayMatches(d)) {
          d.setDate(d.getDate() + 1);
          d.setHours(0, 0, 0);
          continue;
        }
        if (!hour.has(d.getHours())) {
          d.setHours(d.getHours() + 1, 0, 0);
          continue;
        }
        if (!min.has(d.getMinutes())) {
          d.setMinutes(d.getMinutes() + 1, 0);
          continue;
        }
        if (!sec.has(d.getSeconds())) {
          d.setSeconds(d.getSeconds() + 1);
          continue;
        }
        return d;
      }
      throw new Error(`cron '${expr}' never matches in the next 8 years`);
    },
  };
}

function parseField(text: string, spec: FieldSpec): Set<number> {
  const out = new Set<number>();
  for (const item of text.split(",")) {
    const [rangeText, stepText] = item.split("/") as [string, string | undefined];
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`cron ${spec.name} field '${text}': bad step '${stepText}'`);
    let lo: number;
    let hi: number;
    if (rangeText === "*" || rangeText === "?") [lo, hi] = [spec.min, spec.max];
    else if (rangeText.includes("-")) {
      const [a, b] = rangeText.split("-") as [string, string];
      [lo, hi] = [value(a, spec, text), value(b, spec, text)];
    } else {
      lo = value(rangeText, spec, text);
      hi = stepText === undefined ? lo : spec.max;
    }
    if (lo > hi) throw new Error(`cron ${spec.name} field '${text}': range ${lo}-${hi} is backwards`);
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return out;
}

function value(token: string, spec: FieldSpec, field: string): number {
  const idx = spec.names?.indexOf(token.toLowerCase()) ?? -1;
  const v = idx >= 0 ? idx + (spec.namesFrom ?? 0) : Number(token);
  if (!Number.isInteger(v) || v < spec.min || v > spec.max) throw new Error(`cron ${spec.name} field '${field}': '${token}' is not in ${spec.min}-${spec.max}`);
  return v;
}
