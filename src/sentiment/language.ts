/**
 * The Language API's sentiment (`POST /language/:analyze-text`, kind
 * `SentimentAnalysis`), which @azure/ai-language-text calls: the v3.1
 * document results inside `{kind:"SentimentAnalysisResults", results}`, its
 * parameters in the body, the api-version in the query.
 */
import { badRequest, TextAnalyticsError } from './errors.ts';
import { booleanParameter, modelVersionOf, stringIndexTypeOf, type ProblemWording, type V3Parameters } from './v3.ts';

/** 2023-04-01 is what @azure/ai-language-text 1.1 sends; 2022-05-01 the GA before it; 2024-11-01 the GA after. */
export const LANGUAGE_API_VERSIONS = ['2022-05-01', '2023-04-01', '2024-11-01'] as const;

export const LANGUAGE_WORDING: ProblemWording = {
  unsupportedLanguage: (supported) => ({
    message: 'Invalid Language Code.',
    inner: `Invalid language code. Supported languages: ${[...supported].sort().join(',')}. For additional details see https://aka.ms/text-analytics/language-support?tabs=sentiment-analysis`,
  }),
};

/** The api-version query parameter, checked as ASP.NET API versioning does (a 400 naming what is supported). */
export function checkApiVersion(value: unknown): void {
  if (typeof value === 'string' && (LANGUAGE_API_VERSIONS as readonly string[]).includes(value)) return;
  const supported = `Supported versions: ${LANGUAGE_API_VERSIONS.join(', ')}.`;
  if (value === undefined)
    throw new TextAnalyticsError(
      400,
      'MissingApiVersionParameter',
      `The api-version query parameter (?api-version=) is required for all requests. ${supported}`,
    );
  throw new TextAnalyticsError(400, 'UnsupportedApiVersion', `The requested api-version '${String(value).slice(0, 40)}' is not supported. ${supported}`);
}

export interface AnalyzeTextRequest {
  documents: unknown;
  parameters: V3Parameters;
}

function objectOrEmpty(value: unknown, name: string): Record<string, unknown> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest('InvalidRequestBodyFormat', `${name} must be a JSON object.`);
  return value as Record<string, unknown>;
}

/** Reads an analyze-text body; this container serves the SentimentAnalysis kind only, as the vendor's sentiment container does. */
export function parseAnalyzeText(body: unknown, query: Record<string, unknown>): AnalyzeTextRequest {
  checkApiVersion(query['api-version']);
  const fields = objectOrEmpty(body, 'Request body');
  if (fields.kind !== 'SentimentAnalysis') {
    const kind = typeof fields.kind === 'string' ? `'${fields.kind.slice(0, 60)}'` : 'missing';
    throw badRequest('InvalidParameterValue', `Task kind ${kind} is not served by this container; it serves SentimentAnalysis.`);
  }
  const parameters = objectOrEmpty(fields.parameters, 'parameters');
  const modelVersion = modelVersionOf(parameters.modelVersion);
  booleanParameter(parameters.loggingOptOut, 'loggingOptOut');
  return {
    documents: objectOrEmpty(fields.analysisInput, 'analysisInput').documents,
    parameters: {
      modelVersion,
      showStats: booleanParameter(query.showStats, 'showStats'),
      stringIndexType: stringIndexTypeOf(parameters.stringIndexType),
      opinionMining: booleanParameter(parameters.opinionMining, 'opinionMining'),
    },
  };
}
