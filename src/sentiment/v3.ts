/**
 * Text Analytics v3.0/v3.1 sentiment, and the document results the Language
 * API's SentimentAnalysis shares with them: per document a label
 * (positive/neutral/negative/mixed) with the three classes' confidences, its
 * sentences with offsets in the asked index type, warnings; per-document
 * problems as `errors:[{id, error:{code, message, innererror}}]`.
 */
import {
  batchStatistics,
  documentStatistics,
  isScored,
  type AnalyzedBatch,
  type DocumentProblem,
  type ScoredDocument,
  type ScoredSentence,
} from './analyze.ts';
import { confidenceScores, documentLabel, labelOf, type ConfidenceScores, type DocumentLabel, type SentimentLabel } from './classes.ts';
import { badRequest } from './errors.ts';
import { spanIn, type StringIndexType } from './text-elements.ts';
import { tooLargeMessage } from './v2.ts';
import { MODEL_VERSIONS, type ModelVersion } from './versions.ts';

/** What `model-version` may name: `latest` (the container's --model-version) or a version. */
const NAMEABLE_VERSIONS: readonly string[] = ['latest', ...MODEL_VERSIONS];

export interface V3Parameters {
  /** The version asked for; null for none or `latest` (the container's --model-version answers). */
  modelVersion: ModelVersion | null;
  showStats: boolean;
  stringIndexType: StringIndexType;
  opinionMining: boolean;
}

/** Targets and assessments have two classes only. */
interface OpinionScores {
  positive: number;
  negative: number;
}
export interface SentenceTarget {
  sentiment: 'positive' | 'negative';
  confidenceScores: OpinionScores;
  offset: number;
  length: number;
  text: string;
  relations: { relationType: 'assessment'; ref: string }[];
}
export interface SentenceAssessment {
  sentiment: 'positive' | 'negative';
  confidenceScores: OpinionScores;
  offset: number;
  length: number;
  text: string;
  isNegated: boolean;
}
export interface SentenceSentiment {
  sentiment: SentimentLabel;
  confidenceScores: ConfidenceScores;
  offset: number;
  length: number;
  text: string;
  targets?: SentenceTarget[];
  assessments?: SentenceAssessment[];
}
export interface DocumentSentiment {
  id: string;
  sentiment: DocumentLabel;
  statistics?: { charactersCount: number; transactionsCount: number };
  confidenceScores: ConfidenceScores;
  sentences: SentenceSentiment[];
  warnings: { code: string; message: string }[];
}
export interface DocumentError {
  id: string;
  error: { code: string; message: string; innererror: { code: string; message: string } };
}
export interface SentimentResults {
  statistics?: ReturnType<typeof batchStatistics>;
  documents: DocumentSentiment[];
  errors: DocumentError[];
  modelVersion: string;
}

/** A v3 boolean query parameter or Language parameter: absent is false. */
export function booleanParameter(value: unknown, name: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  throw badRequest('InvalidParameterValue', `Invalid value for parameter ${name}: expected true or false.`);
}

/** The version a request names, or null for none and `latest`; anything else is the service's 400. */
export function modelVersionOf(value: unknown): ModelVersion | null {
  if (value === undefined || value === null || value === 'latest') return null;
  if (MODEL_VERSIONS.includes(value as ModelVersion)) return value as ModelVersion;
  throw badRequest(
    'ModelVersionIncorrect',
    `Invalid model version. Possible values are: ${NAMEABLE_VERSIONS.join(',')}. For additional details see https://aka.ms/text-analytics-model-versioning`,
  );
}

/** v3.1 spells it TextElement_v8, the Language API TextElements_v8; both are accepted from both. */
const INDEX_TYPES: Record<string, StringIndexType> = {
  TextElement_v8: 'TextElements',
  TextElements_v8: 'TextElements',
  UnicodeCodePoint: 'UnicodeCodePoint',
  Utf16CodeUnit: 'Utf16CodeUnit',
};

/** Absent is UTF-16 code units, what JavaScript strings count. */
export function stringIndexTypeOf(value: unknown): StringIndexType {
  if (value === undefined || value === null) return 'Utf16CodeUnit';
  const type = typeof value === 'string' ? INDEX_TYPES[value] : undefined;
  if (!type)
    throw badRequest('InvalidParameterValue', `Invalid value for parameter stringIndexType. Supported values: ${Object.keys(INDEX_TYPES).join(', ')}.`);
  return type;
}

/** The query of `/text/analytics/v3.x/sentiment`; v3.0 has no index type (offsets in text elements) and no opinion mining. */
export function v3Parameters(query: Record<string, unknown>, version: 'v3.0' | 'v3.1'): V3Parameters {
  const modelVersion = modelVersionOf(query['model-version']);
  const showStats = booleanParameter(query.showStats, 'showStats');
  if (version === 'v3.0') return { modelVersion, showStats, stringIndexType: 'TextElements', opinionMining: false };
  booleanParameter(query.loggingOptOut, 'loggingOptOut');
  return {
    modelVersion,
    showStats,
    stringIndexType: stringIndexTypeOf(query.stringIndexType),
    opinionMining: booleanParameter(query.opinionMining, 'opinionMining'),
  };
}

/** Wording that differs between v3.x and the Language API. */
export interface ProblemWording {
  unsupportedLanguage: (supported: readonly string[]) => { message: string; inner: string };
}

export const V3_WORDING: ProblemWording = {
  unsupportedLanguage: (supported) => ({ message: 'Invalid Language Code.', inner: `Supplied language not supported. Pass in one of: ${supported.join(',')}` }),
};

function documentError(id: string, problem: DocumentProblem, context: AnswerContext): DocumentError {
  switch (problem) {
    case 'empty':
      return {
        id,
        error: {
          code: 'InvalidArgument',
          message: 'Invalid document in request.',
          innererror: { code: 'InvalidDocument', message: 'Document text is empty.' },
        },
      };
    case 'tooLarge':
      return {
        id,
        error: {
          code: 'InvalidArgument',
          message: 'Invalid document in request.',
          innererror: { code: 'InvalidDocument', message: tooLargeMessage(context.maxDocumentGraphemes) },
        },
      };
    case 'unsupportedLanguage': {
      const { message, inner } = context.wording.unsupportedLanguage(context.supported);
      return { id, error: { code: 'InvalidArgument', message, innererror: { code: 'UnsupportedLanguageCode', message: inner } } };
    }
  }
}

/** Words this long are cut by the service's tokenizer, which it warns about; ours reads them whole, the warning says they are unusual. */
const LONG_WORD = /[^\s]{65,}/u;

function warningsOf(document: ScoredDocument): DocumentSentiment['warnings'] {
  if (!LONG_WORD.test(document.text)) return [];
  return [
    {
      code: 'LongWordsInDocument',
      message:
        'The document contains very long words (longer than 64 characters). These words will be truncated and may result in unreliable model predictions.',
    },
  ];
}

const round2 = (x: number) => Math.round(x * 100) / 100;

function opinionScores(p: number): { sentiment: 'positive' | 'negative'; confidenceScores: OpinionScores } {
  const positive = round2(p);
  return { sentiment: p >= 0.5 ? 'positive' : 'negative', confidenceScores: { positive, negative: round2(1 - positive) } };
}

/** A span of a sentence, placed in its document and counted in the asked index type, with its text. */
function placed(document: ScoredDocument, sentence: ScoredSentence, span: { offset: number; length: number }, type: StringIndexType) {
  const offset = sentence.offset + span.offset;
  return { ...spanIn(document.text, { offset, length: span.length }, type), text: document.text.slice(offset, offset + span.length) };
}

/** `targets` and `assessments`, whose relations point at assessments by JSON pointer as the service's do. */
function sentenceOpinions(document: ScoredDocument, sentence: ScoredSentence, where: { document: number; sentence: number }, type: StringIndexType) {
  const mined = sentence.opinions ?? { targets: [], assessments: [] };
  const assessments = mined.assessments.map((a) => ({ ...opinionScores(a.score), ...placed(document, sentence, a, type), isNegated: a.isNegated }));
  const targets = mined.targets.map((t) => ({
    ...opinionScores(t.assessments.reduce((sum, i) => sum + mined.assessments[i]!.score, 0) / t.assessments.length),
    ...placed(document, sentence, t, type),
    relations: t.assessments.map((i) => ({
      relationType: 'assessment' as const,
      ref: `#/documents/${where.document}/sentences/${where.sentence}/assessments/${i}`,
    })),
  }));
  return { targets, assessments };
}

function sentenceSentiment(document: ScoredDocument, index: { document: number; sentence: number }, parameters: V3Parameters): SentenceSentiment {
  const sentence = document.sentences[index.sentence]!;
  const scores = confidenceScores(sentence.score);
  const text = document.text.slice(sentence.offset, sentence.offset + sentence.length);
  const answer = { sentiment: labelOf(scores), confidenceScores: scores, ...spanIn(document.text, sentence, parameters.stringIndexType), text };
  return parameters.opinionMining ? { ...answer, ...sentenceOpinions(document, sentence, index, parameters.stringIndexType) } : answer;
}

export interface AnswerContext {
  parameters: V3Parameters;
  supported: readonly string[];
  maxDocumentGraphemes: number;
  wording: ProblemWording;
}

/** `index`: the document's place in the answer's `documents`, which the assessment pointers name. */
function documentSentiment(document: ScoredDocument, index: number, context: AnswerContext): DocumentSentiment {
  const sentences = document.sentences.map((_, sentence) => sentenceSentiment(document, { document: index, sentence }, context.parameters));
  const sentiment = documentLabel(sentences.map((s) => s.sentiment));
  const confidence = confidenceScores(document.score);
  const warnings = warningsOf(document);
  if (!context.parameters.showStats) return { id: document.id, sentiment, confidenceScores: confidence, sentences, warnings };
  return { id: document.id, sentiment, statistics: documentStatistics(document), confidenceScores: confidence, sentences, warnings };
}

export function sentimentResults(batch: AnalyzedBatch, context: AnswerContext): SentimentResults {
  const documents: DocumentSentiment[] = [];
  const errors: DocumentError[] = [];
  for (const document of batch.documents) {
    if (isScored(document)) documents.push(documentSentiment(document, documents.length, context));
    else errors.push(documentError(document.id, document.problem, context));
  }
  const results = { documents, errors, modelVersion: batch.modelVersion };
  return context.parameters.showStats ? { statistics: batchStatistics(batch), ...results } : results;
}
