/**
 * POST …/sentiment in Text Analytics v2 terms (spec §2.2, §7; reference
 * §3.1–3.3): the batch is checked as a whole (problems → 400), then each
 * document (problems → an entry of `errors`, the rest are scored).
 */
import { badRequest } from './errors.ts';

export interface SentimentLimits {
  maxDocuments: number;
  /** Counted in text elements (grapheme clusters), as the real service counts. */
  maxDocumentGraphemes: number;
}

export interface DocumentStatistics {
  charactersCount: number;
  transactionsCount: number;
}
export interface DocumentSentiment {
  id: string;
  score: number;
  statistics?: DocumentStatistics;
}
export interface DocumentError {
  id: string;
  message: string;
}
export interface SentimentBatchResult {
  statistics?: { documentsCount: number; validDocumentsCount: number; erroneousDocumentsCount: number; transactionsCount: number };
  documents: DocumentSentiment[];
  errors: DocumentError[];
}

/** Usage of one call, for the billing meters: counts only. */
export interface SentimentUsage {
  documents: number;
  transactions: number;
}

/** Scores texts of one language (the trained model for en). */
export type LanguageScorer = (texts: string[]) => Promise<Float64Array>;

export const DOCUMENT_MESSAGES = {
  empty: 'Record cannot be null/empty',
  unsupportedLanguage: (supported: string[]) => `Supplied language not supported. Pass in one of:${supported.join(',')}`,
  tooLarge: (max: number) =>
    `A document within the request was too large to be processed. Limit document size to: ${max} text elements. For additional details on the data limitations see https://aka.ms/text-analytics-data-limits`,
};

/** One transaction per started 1,000 characters of a document (the Text Analytics unit). */
const CHARACTERS_PER_TRANSACTION = 1000;

interface InputDocument {
  id: string;
  language: string;
  text: string | null;
}

const segmenter = new Intl.Segmenter('en', { granularity: 'grapheme' });

/** Below U+0300 (Latin, no combining marks, no surrogates) every code unit is a cluster, except CR LF. */
const SIMPLE_TEXT = /^[^\u0300-\uffff]*$/;

/** Grapheme clusters in text, counting no further than limit + 1. */
export function countTextElements(text: string, limit = Infinity): number {
  if (SIMPLE_TEXT.test(text)) return text.length - (text.match(/\r\n/g)?.length ?? 0);
  let count = 0;
  for (const _ of segmenter.segment(text)) {
    if (++count > limit) break;
  }
  return count;
}

function optionalString(value: unknown, what: string, index: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw badRequest('InvalidDocument', `Document at index ${index}: ${what} must be a string.`);
  return value;
}

/** Checks the batch as a whole; throws a 400 for what makes it unusable. */
export function parseDocuments(body: unknown, limits: SentimentLimits): InputDocument[] {
  const documents = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { documents?: unknown }).documents : undefined;
  if (!Array.isArray(documents)) throw badRequest('InvalidRequestBodyFormat', 'Request body must be a JSON object with a "documents" array.');
  if (documents.length === 0) throw badRequest('MissingInputRecords', 'Request contains no documents.');
  if (documents.length > limits.maxDocuments) {
    throw badRequest('InvalidDocumentBatch', `Batch request contains too many records. Max ${limits.maxDocuments} records are permitted.`);
  }
  const ids = new Set<string>();
  return documents.map((document: unknown, index) => {
    if (typeof document !== 'object' || document === null || Array.isArray(document)) {
      throw badRequest('InvalidDocument', `Document at index ${index} is not an object.`);
    }
    const fields = document as Record<string, unknown>;
    const id = optionalString(fields.id, 'id', index);
    if (!id) throw badRequest('InvalidDocument', `Document at index ${index} has no id. Every document needs a unique, non-empty id.`);
    if (ids.has(id)) throw badRequest('InvalidDocument', 'Request contains duplicated Ids. Make sure each document has a unique Id.');
    ids.add(id);
    // A document without a language is English, as the v2 service assumed.
    const language = optionalString(fields.language, 'language', index) || 'en';
    return { id, language, text: optionalString(fields.text, 'text', index) };
  });
}

export interface AnalyzeOptions {
  limits: SentimentLimits;
  /** By lower-case language code. */
  scorers: ReadonlyMap<string, LanguageScorer>;
  showStats: boolean;
}

export async function analyzeSentiment(body: unknown, options: AnalyzeOptions): Promise<{ result: SentimentBatchResult; usage: SentimentUsage }> {
  const documents = parseDocuments(body, options.limits);
  const supported = [...options.scorers.keys()];
  const errors: DocumentError[] = [];
  const valid: { id: string; language: string; text: string; characters: number }[] = [];
  for (const document of documents) {
    const language = document.language.toLowerCase();
    if (!document.text?.trim()) errors.push({ id: document.id, message: DOCUMENT_MESSAGES.empty });
    else if (!options.scorers.has(language)) errors.push({ id: document.id, message: DOCUMENT_MESSAGES.unsupportedLanguage(supported) });
    else {
      const characters = countTextElements(document.text, options.limits.maxDocumentGraphemes);
      if (characters > options.limits.maxDocumentGraphemes) errors.push({ id: document.id, message: DOCUMENT_MESSAGES.tooLarge(options.limits.maxDocumentGraphemes) });
      else valid.push({ id: document.id, language, text: document.text, characters });
    }
  }
  const scores = new Map<string, number>();
  for (const [language, scorer] of options.scorers) {
    const batch = valid.filter((d) => d.language === language);
    const scored = await scorer(batch.map((d) => d.text));
    batch.forEach((d, i) => scores.set(d.id, scored[i]!));
  }
  let transactions = 0;
  const scoredDocuments = valid.map((d): DocumentSentiment => {
    const transactionsCount = Math.max(1, Math.ceil(d.characters / CHARACTERS_PER_TRANSACTION));
    transactions += transactionsCount;
    const score = scores.get(d.id)!;
    return options.showStats ? { id: d.id, score, statistics: { charactersCount: d.characters, transactionsCount } } : { id: d.id, score };
  });
  const result: SentimentBatchResult = { documents: scoredDocuments, errors };
  if (options.showStats) {
    return {
      result: {
        statistics: { documentsCount: documents.length, validDocumentsCount: valid.length, erroneousDocumentsCount: errors.length, transactionsCount: transactions },
        ...result,
      },
      usage: { documents: valid.length, transactions },
    };
  }
  return { result, usage: { documents: valid.length, transactions } };
}
