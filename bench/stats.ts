// Summary statistics for benchmark figures: every reported figure is the median of several runs,
// printed with its spread so a reader can tell a real difference from noise.

/** The q-quantile (0..1) of the values, linearly interpolated between closest ranks. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new Error('quantile of no values');
  if (q < 0 || q > 1) throw new Error(`quantile ${q} is outside 0..1`);
  const sorted = [...values].sort((a, b) => a - b);
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

export const median = (values: readonly number[]) => quantile(values, 0.5);

export interface Summary {
  n: number;
  median: number;
  min: number;
  max: number;
  /** Interquartile range (q3 − q1). */
  iqr: number;
}

export function summarize(values: readonly number[]): Summary {
  return {
    n: values.length,
    median: median(values),
    min: Math.min(...values),
    max: Math.max(...values),
    iqr: quantile(values, 0.75) - quantile(values, 0.25),
  };
}

/** Formats a number for a table: thousands separated, `digits` decimals. */
export function fmt(value: number, digits = 0): string {
  return value.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/** "median (min–max)" — or just the value when there was one run. */
export function fmtSummary(s: Summary, digits = 0, unit = ''): string {
  const u = unit ? ` ${unit}` : '';
  if (s.n === 1 || s.min === s.max) return `${fmt(s.median, digits)}${u}`;
  return `${fmt(s.median, digits)}${u} (${fmt(s.min, digits)}–${fmt(s.max, digits)})`;
}

/** Relative spread (max − min) / median, as a percentage: the script prints it so noisy figures show. */
export function relativeSpread(s: Summary): number {
  return s.median === 0 ? 0 : (100 * (s.max - s.min)) / Math.abs(s.median);
}

export const mib = (bytes: number) => bytes / (1024 * 1024);
