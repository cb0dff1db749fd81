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
  const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
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

export const sentimentPaths: OpenApiPaths = {
  '/text/analytics/v2.0/sentiment': sentimentOperation('v2.0'),
  '/text/analytics/v2.1/sentiment': sentimentOperation('v2.1'),
};
