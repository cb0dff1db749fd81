/**
 * Sentences of a document for the v3 and Language answers: Unicode sentence
 * boundaries (Intl.Segmenter, the document's language), each sentence without
 * the white space around it, as the v3 service's sentences are ("Hello world."
 * at 0, length 12, the next one at 13). Offsets here are UTF-16 code units;
 * text-elements.ts turns them into the index type a client asked for.
 */

export interface SentenceSpan {
  offset: number;
  length: number;
}

const segmenters = new Map<string, Intl.Segmenter>();

function segmenterFor(language: string): Intl.Segmenter {
  let segmenter = segmenters.get(language);
  if (!segmenter) {
    segmenter = new Intl.Segmenter(language, { granularity: 'sentence' });
    segmenters.set(language, segmenter);
  }
  return segmenter;
}

export function splitSentences(text: string, language: string): SentenceSpan[] {
  const spans: SentenceSpan[] = [];
  for (const { segment, index } of segmenterFor(language).segment(text)) {
    const start = segment.length - segment.trimStart().length;
    const trimmed = segment.trim();
    if (trimmed) spans.push({ offset: index + start, length: trimmed.length });
  }
  return spans;
}
