/**
 * The written pages of a page blob, as byte ranges: inclusive `[start, end]`, sorted, and
 * apart (two ranges that touch are one). Every start is a multiple of 512 and every end one
 * less than a multiple: pages are 512 bytes and written whole.
 */
export type PageRange = [start: number, end: number];

/** Pages are written and cleared in units of this many bytes. */
export const PAGE_SIZE = 512;

/** `ranges` with `[start, end]` written too. */
export function withRange(ranges: readonly PageRange[], start: number, end: number): PageRange[] {
  const kept: PageRange[] = [];
  let merged: PageRange = [start, end];
  for (const range of ranges) {
    if (range[1] + 1 < merged[0] || range[0] > merged[1] + 1) kept.push(range);
    else merged = [Math.min(range[0], merged[0]), Math.max(range[1], merged[1])];
  }
  return [...kept, merged].sort((a, b) => a[0] - b[0]);
}

/** `ranges` with `[start, end]` cleared. */
export function withoutRange(ranges: readonly PageRange[], start: number, end: number): PageRange[] {
  const kept: PageRange[] = [];
  for (const [a, b] of ranges) {
    if (b < start || a > end) {
      kept.push([a, b]);
      continue;
    }
    if (a < start) kept.push([a, start - 1]);
    if (b > end) kept.push([end + 1, b]);
  }
  return kept;
}

/** The parts of `ranges` within `[start, end]`. */
export function rangesWithin(ranges: readonly PageRange[], start: number, end: number): PageRange[] {
  return ranges.filter(([a, b]) => b >= start && a <= end).map(([a, b]) => [Math.max(a, start), Math.min(b, end)]);
}

/** The parts of `ranges` that `others` does not hold. */
export function rangesOutside(ranges: readonly PageRange[], others: readonly PageRange[]): PageRange[] {
  return others.reduce<PageRange[]>((left, [a, b]) => withoutRange(left, a, b), [...ranges]);
}

/** The parts both hold. */
export function rangesInBoth(ranges: readonly PageRange[], others: readonly PageRange[]): PageRange[] {
  return others.flatMap(([a, b]) => rangesWithin(ranges, a, b)).sort((x, y) => x[0] - y[0]);
}
