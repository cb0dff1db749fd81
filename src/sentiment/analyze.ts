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

/** Per text: its length in text elements, and its score (NaN for a text over the limit, which is not scored). */
export interface MeasuredTexts {
  characters: Uint32Array;
  scores: Float64Array;
}
/** Measures and scores texts of one language (the trained model for en), off the event loop. */
export type LanguageScorer = (texts: string[], maxTextElements: number) => Promise<MeasuredTexts>;

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
  const max = options.limits.maxDocumentGraphemes;
  const supported = [...options.scorers.keys()];
  const problems = new Map<string, string>();
  const toScore: { id: string; language: string; text: string }[] = [];
  for (const document of documents) {
    const language = document.language.toLowerCase();
    if (!document.text?.trim()) problems.set(document.id, DOCUMENT_MESSAGES.empty);
    else if (!options.scorers.has(language)) problems.set(document.id, DOCUMENT_MESSAGES.unsupportedLanguage(supported));
    else toScore.push({ id: document.id, language, text: document.text });
  }
  const measured = new Map<string, { characters: number; score: number }>();
  await Promise.all(
    [...options.scorers].map(async ([language, scorer]) => {
      const batch = toScore.filter((d) => d.language === language);
      if (batch.length === 0) return;
      const { characters, scores } = await scorer(
        batch.map((d) => d.text),
        max,
      );
      batch.forEach((d, i) => {
        if (characters[i]! > max) problems.set(d.id, DOCUMENT_MESSAGES.tooLarge(max));
        else measured.set(d.id, { characters: characters[i]!, score: scores[i]! });
      });
    }),
  );
  // Both arrays keep the request's order.
  const errors: DocumentError[] = [];
  const scored: DocumentSentiment[] = [];
  let transactions = 0;
  for (const { id } of documents) {
    const problem = problems.get(id);
    if (problem) {
      errors.push({ id, message: problem });
      continue;
    }
    const { characters, score } = measured.get(id)!;
    const transactionsCount = Math.max(1, Math.ceil(characters / CHARACTERS_PER_TRANSACTION));
    transactions += transactionsCount;
    scored.push(options.showStats ? { id, score, statistics: { charactersCount: characters, transactionsCount } } : { id, score });
  }
  const usage = { documents: scored.length, transactions };
  if (!options.showStats) return { result: { documents: scored, errors }, usage };
  const statistics = {
    documentsCount: documents.length,
    validDocumentsCount: scored.length,
    erroneousDocumentsCount: errors.length,
    transactionsCount: transactions,
  };
  return { result: { statistics, documents: scored, errors }, usage };
}
