/**
 * Text Analytics v2.0/v2.1 answers (spec §2.2, §7; reference §3.2): a score
 * per document, per-document problems as `errors:[{id, message}]`.
 */
import { batchStatistics, documentStatistics, isScored, type AnalyzedBatch, type DocumentProblem } from './analyze.ts';

export interface DocumentSentimentV2 {
  id: string;
  score: number;
  statistics?: { charactersCount: number; transactionsCount: number };
}
export interface SentimentBatchResultV2 {
  statistics?: ReturnType<typeof batchStatistics>;
  documents: DocumentSentimentV2[];
  errors: { id: string; message: string }[];
}

export function tooLargeMessage(max: number): string {
  return `A document within the request was too large to be processed. Limit document size to: ${max} text elements. For additional details on the data limitations see https://aka.ms/text-analytics-data-limits`;
}

export function v2Message(problem: DocumentProblem, context: { supported: readonly string[]; maxDocumentGraphemes: number }): string {
  switch (problem) {
    case 'empty':
      return 'Record cannot be null/empty';
    case 'unsupportedLanguage':
      return `Supplied language not supported. Pass in one of:${context.supported.join(',')}`;
    case 'tooLarge':
      return tooLargeMessage(context.maxDocumentGraphemes);
  }
}

export function answerV2(
  batch: AnalyzedBatch,
  context: { showStats: boolean; supported: readonly string[]; maxDocumentGraphemes: number },
): SentimentBatchResultV2 {
  const documents: DocumentSentimentV2[] = [];
  const errors: SentimentBatchResultV2['errors'] = [];
  for (const document of batch.documents) {
    if (!isScored(document)) errors.push({ id: document.id, message: v2Message(document.problem, context) });
    else if (context.showStats) documents.push({ id: document.id, score: document.score, statistics: documentStatistics(document) });
    else documents.push({ id: document.id, score: document.score });
  }
  return context.showStats ? { statistics: batchStatistics(batch), documents, errors } : { documents, errors };
}
