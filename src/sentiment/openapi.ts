/** The sentiment endpoints as the container's OpenAPI document lists them (GET /swagger). */
import type { OpenApiPaths } from '../cognitive/index.ts';

export const sentimentSchemas = {
  MultiLanguageBatchInput: {
    type: 'object',
    required: ['documents'],
    properties: {
      documents: {
        type: 'array',
        maxItems: 1000,
        items: {
          type: 'object',
          required: ['id', 'text'],
          properties: { language: { type: 'string', example: 'en' }, id: { type: 'string' }, text: { type: 'string', maxLength: 5120 } },
        },
      },
    },
  },
  SentimentBatchResult: {
    type: 'object',
    properties: {
      documents: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, score: { type: 'number', minimum: 0, maximum: 1 } } } },
      errors: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, message: { type: 'string' } } } },
    },
  },
  SentimentResponse: {
    type: 'object',
    description: 'v3.x and the Language API (inside {kind:"SentimentAnalysisResults", results})',
    properties: {
      documents: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            id: { type: 'string' },
            sentiment: { type: 'string', enum: ['positive', 'neutral', 'negative', 'mixed'] },
            confidenceScores: { $ref: '#/components/schemas/SentimentConfidenceScores' },
            sentences: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  sentiment: { type: 'string', enum: ['positive', 'neutral', 'negative'] },
                  confidenceScores: { $ref: '#/components/schemas/SentimentConfidenceScores' },
                  offset: { type: 'integer' },
                  length: { type: 'integer' },
                  text: { type: 'string' },
                },
              },
            },
            warnings: { type: 'array', items: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } } },
          },
        },
      },
      errors: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, error: { $ref: '#/components/schemas/ErrorV3' } } } },
      modelVersion: { type: 'string' },
    },
  },
  SentimentConfidenceScores: {
    type: 'object',
    properties: { positive: { type: 'number' }, neutral: { type: 'number' }, negative: { type: 'number' } },
  },
  ErrorV3: {
    type: 'object',
    properties: {
      code: { type: 'string' },
      message: { type: 'string' },
      innererror: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
    },
  },
  ErrorResponse: {
    type: 'object',
    properties: {
      code: { type: 'string' },
      message: { type: 'string' },
      innerError: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } },
    },
  },
};

const example = {
  documents: [
    { language: 'en', id: '1', text: 'Hello world. This is some input text that I love.' },
    { language: 'en', id: '2', text: 'It is a dreadful, boring film.' },
  ],
};

function sentimentOperation(version: string) {
  const body = { schema: ref('MultiLanguageBatchInput'), example };
  return {
    post: {
      summary: `Sentiment (Text Analytics ${version}): a score from 0 (negative) to 1 (positive) per document`,
      parameters: [{ name: 'showStats', in: 'query', required: false, schema: { type: 'boolean' } }],
      requestBody: { required: true, content: { 'application/json': body, 'application/json-patch+json': body, 'text/json': body } },
      responses: {
        '200': { description: 'Scores, and per-document errors', content: { 'application/json': { schema: ref('SentimentBatchResult') } } },
        '400': { description: 'The batch is unusable', content: { 'application/json': { schema: ref('ErrorResponse') } } },
        '503': { description: 'Billing cannot be reached (see /status); Retry-After says when to try again' },
      },
    },
  };
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const query = (name: string, schema: object) => ({ name, in: 'query', required: false, schema });
const v3Errors = {
  '400': {
    description: 'The batch or a parameter is unusable',
    content: { 'application/json': { schema: { type: 'object', properties: { error: ref('ErrorV3') } } } },
  },
  '503': { description: 'Billing cannot be reached (see /status); Retry-After says when to try again' },
};

function v3Operation(version: 'v3.0' | 'v3.1') {
  const body = { schema: ref('MultiLanguageBatchInput'), example };
  const v31 = [
    query('loggingOptOut', { type: 'boolean' }),
    query('stringIndexType', { type: 'string', enum: ['Utf16CodeUnit', 'UnicodeCodePoint', 'TextElement_v8'], default: 'Utf16CodeUnit' }),
    query('opinionMining', { type: 'boolean' }),
  ];
  return {
    post: {
      summary: `Sentiment (Text Analytics ${version}): a label and three class confidences per document and per sentence`,
      parameters: [query('model-version', { type: 'string', example: 'latest' }), query('showStats', { type: 'boolean' }), ...(version === 'v3.1' ? v31 : [])],
      requestBody: { required: true, content: { 'application/json': body, 'text/json': body } },
      responses: {
        '200': { description: 'Sentiment, and per-document errors', content: { 'application/json': { schema: ref('SentimentResponse') } } },
        ...v3Errors,
      },
    },
  };
}

const analyzeTextExample = { kind: 'SentimentAnalysis', analysisInput: example, parameters: { opinionMining: false, stringIndexType: 'Utf16CodeUnit' } };

export const sentimentPaths: OpenApiPaths = {
  '/text/analytics/v2.0/sentiment': sentimentOperation('v2.0'),
  '/text/analytics/v2.1/sentiment': sentimentOperation('v2.1'),
  '/text/analytics/v3.0/sentiment': v3Operation('v3.0'),
  '/text/analytics/v3.1/sentiment': v3Operation('v3.1'),
  '/language/:analyze-text?api-version=2023-04-01': {
    post: {
      summary:
        'Language API analyze-text, kind SentimentAnalysis (api-version 2022-05-01, 2023-04-01 or 2024-11-01; parameters modelVersion, loggingOptOut, opinionMining, stringIndexType)',
      parameters: [query('showStats', { type: 'boolean' })],
      requestBody: { required: true, content: { 'application/json': { example: analyzeTextExample } } },
      responses: {
        '200': { description: '{kind: "SentimentAnalysisResults", results}', content: { 'application/json': { schema: ref('SentimentResponse') } } },
        ...v3Errors,
      },
    },
  },
};
