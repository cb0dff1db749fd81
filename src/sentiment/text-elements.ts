/**
 * Document length in text elements (grapheme clusters), as the service's
 * 5,120 limit counts it. Intl.Segmenter's cost per cluster grows with the
 * length of the string it walks (quadratic over a long text: seconds for
 * 100 k characters), so long texts are walked in short windows, each starting
 * at a cluster boundary the previous window found.
 */

/** Below U+0300 (Latin, no combining marks, no surrogates) every code unit is a cluster, except CR LF. */
const SIMPLE_TEXT = /^[^\u0300-\uffff]*$/;
const WINDOW = 256;
const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Grapheme clusters in text; stops counting once past `limit`. */
export function countTextElements(text: string, limit = Infinity): number {
  if (SIMPLE_TEXT.test(text)) return text.length - (text.match(/\r\n/g)?.length ?? 0);
  let count = 0;
  let start = 0;
  let window = WINDOW;
  while (start < text.length && count <= limit) {
    let end = Math.min(text.length, start + window);
    // Never split a surrogate pair: a half code point would end the cluster before it early.
    if (end < text.length && /[\ud800-\udbff]/.test(text[end - 1]!)) end++;
    let clusters = 0;
    let lastStart = 0;
    for (const { index } of segmenter.segment(text.slice(start, end))) {
      clusters++;
      lastStart = index;
    }
    if (end === text.length) return count + clusters;
    if (clusters === 1) {
      // One cluster fills the whole window (a letter with hundreds of marks): look further.
      window *= 2;
      continue;
    }
    // Boundaries inside the window are final; the last cluster may go on past it, so it is counted next time.
    count += clusters - 1;
    start += lastStart;
    window = WINDOW;
  }
  return count;
}

/** How v3.1 and the Language API count `offset` and `length` (`stringIndexType`). */
export type StringIndexType = 'Utf16CodeUnit' | 'UnicodeCodePoint' | 'TextElements';

function lengthIn(text: string, type: StringIndexType): number {
  switch (type) {
    case 'Utf16CodeUnit':
      return text.length;
    case 'UnicodeCodePoint':
      return text.length - (text.match(/[\ud800-\udbff][\udc00-\udfff]/g)?.length ?? 0);
    case 'TextElements':
      return countTextElements(text);
  }
}

/** A span given in UTF-16 code units, counted in `type`; it must start and end on cluster boundaries. */
export function spanIn(text: string, span: { offset: number; length: number }, type: StringIndexType): { offset: number; length: number } {
  if (type === 'Utf16CodeUnit') return { offset: span.offset, length: span.length };
  return { offset: lengthIn(text.slice(0, span.offset), type), length: lengthIn(text.slice(span.offset, span.offset + span.length), type) };
}
