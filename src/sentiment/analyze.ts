/**
 * Sentiment of a batch of documents, whatever API generation asked: the batch
 * is checked as a whole (problems → a 400 in the caller's dialect), then each
 * document (problems → a per-document error, the rest are scored by one
 * model). v2.ts, v3.ts and language.ts turn the result into each API's answer.
 */
import { badRequest } from './errors.ts';
import type { MinedOpinions } from './opinions.ts';
import type { SentenceSpan } from './sentences.ts';
import type { ModelVersion } from './versions.ts';

export interface SentimentLimits {
  maxDocuments: number;
  /** Counted in text elements (grapheme clusters), as the real service counts. */
  maxDocumentGraphemes: number;
}

/** Usage of one call, for the billing meters: counts only. */
export interface SentimentUsage {
  documents: number;
  transactions: number;
}

export interface ScoredSentence extends SentenceSpan {
  score: number;
  /** When opinion mining was asked for (English). */
  opinions?: MinedOpinions;
}

/** Per text: its length in text elements, and its score (NaN for a text over the limit, which is not scored). */
export interface MeasuredTexts {
  characters: Uint32Array;
  scores: Float64Array;
  /** Each text's sentences with their own scores, when asked for (empty for a text over the limit). */
  sentences?: ScoredSentence[][];
}
/** What a scorer is asked besides the texts. */
export interface ScoreOptions {
  maxTextElements: number;
  sentences: boolean;
  opinions: boolean;
  /** The English model version (other languages have one scorer each). */
  modelVersion: ModelVersion;
}
/** Measures and scores texts of one language (the trained model for en), off the event loop. */
export type LanguageScorer = (texts: string[], options: ScoreOptions) => Promise<MeasuredTexts>;

export interface InputDocument {
  id: string;
  language: string;
  text: string | null;
}

export type DocumentProblem = 'empty' | 'unsupportedLanguage' | 'tooLarge';

export interface ScoredDocument {
  id: string;
  text: string;
  /** The scorer's language code (lower case, no region). */
  language: string;
  /** Length in text elements. */
  characters: number;
  transactions: number;
  /** The model's probability of "positive" for the whole text: the v2 score. */
  score: number;
  sentences: ScoredSentence[];
}
export interface FailedDocument {
  id: string;
  problem: DocumentProblem;
}
export type AnalyzedDocument = ScoredDocument | FailedDocument;

export interface AnalyzedBatch {
  /** In request order. */
  documents: AnalyzedDocument[];
  usage: SentimentUsage;
  modelVersion: ModelVersion;
}

export function isScored(document: AnalyzedDocument): document is ScoredDocument {
  return 'score' in document;
}

/** One transaction per started 1,000 characters of a document (the Text Analytics unit). */
const CHARACTERS_PER_TRANSACTION = 1000;

function optionalString(value: unknown, what: string, index: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw badRequest('InvalidDocument', `Document at index ${index}: ${what} must be a string.`);
  return value;
}

/**
 * Checks the `documents` array as a whole; throws a 400 for what makes it
 * unusable. `emptyCode` is the inner code of an empty batch, which the
 * Language API renamed.
 */
export function parseDocuments(documents: unknown, maxDocuments: number, emptyCode = 'MissingInputRecords'): InputDocument[] {
  if (!Array.isArray(documents)) throw badRequest('InvalidRequestBodyFormat', 'Request body must be a JSON object with a "documents" array.');
  if (documents.length === 0) throw badRequest(emptyCode, 'Missing input records.');
  if (documents.length > maxDocuments) {
    throw badRequest('InvalidDocumentBatch', `Batch request contains too many records. Max ${maxDocuments} records are permitted.`);
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
    // A document without a language is English, as every generation of the service assumes.
    const language = optionalString(fields.language, 'language', index) || 'en';
    return { id, language, text: optionalString(fields.text, 'text', index) };
  });
}

/** The `documents` of a v2 or v3 body, `{documents:[…]}`. */
export function documentsOf(body: unknown): unknown {
  return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as { documents?: unknown }).documents : undefined;
}

export interface AnalyzeOptions {
  maxDocumentGraphemes: number;
  /** By lower-case language code. */
  scorers: ReadonlyMap<string, LanguageScorer>;
  /** Score each sentence too (v3 and Language). */
  sentences: boolean;
  /** Mine each sentence's opinions too (v3.1 and Language `opinionMining`). */
  opinions?: boolean;
  modelVersion: ModelVersion;
}

/** The scorer a language code names: exact (case-insensitive), or by its primary subtag (`pt-BR` → `pt`). */
function scorerLanguage(code: string, scorers: ReadonlyMap<string, LanguageScorer>): string | undefined {
  const lower = code.toLowerCase();
  if (scorers.has(lower)) return lower;
  const primary = lower.split('-')[0]!;
  return scorers.has(primary) ? primary : undefined;
}

export async function analyzeDocuments(documents: InputDocument[], options: AnalyzeOptions): Promise<AnalyzedBatch> {
  const max = options.maxDocumentGraphemes;
  const problems = new Map<string, DocumentProblem>();
  const toScore: { id: string; language: string; text: string }[] = [];
  for (const document of documents) {
    const language = scorerLanguage(document.language, options.scorers);
    if (!document.text?.trim()) problems.set(document.id, 'empty');
    else if (!language) problems.set(document.id, 'unsupportedLanguage');
    else toScore.push({ id: document.id, language, text: document.text });
  }
  const scored = new Map<string, ScoredDocument>();
  await Promise.all(
    [...options.scorers].map(async ([language, scorer]) => {
      const batch = toScore.filter((d) => d.language === language);
      if (batch.length === 0) return;
      const measured = await scorer(
        batch.map((d) => d.text),
        { maxTextElements: max, sentences: options.sentences, opinions: options.opinions ?? false, modelVersion: options.modelVersion },
      );
      batch.forEach((d, i) => {
        const characters = measured.characters[i]!;
        if (characters > max) {
          problems.set(d.id, 'tooLarge');
          return;
        }
        const transactions = Math.max(1, Math.ceil(characters / CHARACTERS_PER_TRANSACTION));
        scored.set(d.id, { ...d, characters, transactions, score: measured.scores[i]!, sentences: measured.sentences?.[i] ?? [] });
      });
    }),
  );
  const analyzed = documents.map(({ id }): AnalyzedDocument => scored.get(id) ?? { id, problem: problems.get(id)! });
  const valid = [...scored.values()];
  return {
    documents: analyzed,
    usage: { documents: valid.length, transactions: valid.reduce((sum, d) => sum + d.transactions, 0) },
    modelVersion: options.modelVersion,
  };
}

/** The request-level `statistics` every generation answers with `showStats`. */
export function batchStatistics(batch: AnalyzedBatch) {
  return {
    documentsCount: batch.documents.length,
    validDocumentsCount: batch.usage.documents,
    erroneousDocumentsCount: batch.documents.length - batch.usage.documents,
    transactionsCount: batch.usage.transactions,
  };
}

export function documentStatistics(document: ScoredDocument) {
  return { charactersCount: document.characters, transactionsCount: document.transactions };
}
