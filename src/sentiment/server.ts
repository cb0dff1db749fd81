/**
 * The sentiment container (spec §1, §4.3, §4.12; reference §3), every API
 * generation on one port (5000) as the vendor's container: Text Analytics
 * v2.0/v2.1 and v3.0/v3.1 `POST /text/analytics/v{2.0,2.1,3.0,3.1}/sentiment`, and the
 * Language API's `POST /language/:analyze-text` (SentimentAnalysis), all
 * scored by the model this project trains (models/sentiment-en), behind the
 * cognitive containers' billing contract.
 */
import { resolve } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { createLogger } from '../common/log.ts';
import { resolveOptionalTls } from '../common/tls.ts';
import { billingGate, CONTAINER_KINDS, openBillingConnection, registerContainerSurface } from '../cognitive/index.ts';
import { analyzeDocuments, documentsOf, parseDocuments, type AnalyzedBatch, type LanguageScorer } from './analyze.ts';
import { badRequest, dialectOf, MESSAGES, notFound, refusalBody, toWireError } from './errors.ts';
import { LANGUAGE_WORDING, parseAnalyzeText } from './language.ts';
import { answerV2 } from './v2.ts';
import { sentimentResults, V3_WORDING, v3Parameters, type AnswerContext, type V3Parameters } from './v3.ts';
import { sentimentPaths, sentimentSchemas } from './openapi.ts';
import { sentimentOptions } from './options.ts';
import { ScorerPool } from './scorer.ts';
import { servedLanguages } from './lexicons.ts';
import { containerModelVersion, ENCODER_MODEL_DIR, NGRAM_MODEL_DIR, type ModelVersion } from './versions.ts';

export const CONTAINER_VERSION = '2.1.0';
export const DEFAULT_MODEL_DIR = NGRAM_MODEL_DIR;
/** Usage meters: documents scored, and the billed transactions (one per started 1,000 characters). */
export const SENTIMENT_METERS = {
  documents: 'CognitiveServices.TextAnalytics.Container.Sentiment.Documents',
  transactions: CONTAINER_KINDS.sentiment.billedMeter,
} as const;

export type SentimentOptions = OptionValues<typeof sentimentOptions>;

const JSON_TYPES = ['application/json', 'application/json-patch+json', 'text/json'];
const OTHER_JSON_TYPES = /^application\/[a-z0-9.+-]*\+json$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** JSON bodies under every media type the v2 clients send; bytes that are not UTF-8 are refused, not replaced. */
function acceptJsonBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  const parse = (_request: FastifyRequest, raw: Buffer, done: (err: Error | null, body?: unknown) => void) => {
    let text: string;
    try {
      text = strictUtf8.decode(raw);
    } catch {
      done(badRequest('InvalidRequestBodyFormat', MESSAGES.notUtf8));
      return;
    }
    try {
      done(null, JSON.parse(text));
    } catch {
      done(badRequest('InvalidRequestBodyFormat', MESSAGES.badJson));
    }
  };
  app.addContentTypeParser(JSON_TYPES, { parseAs: 'buffer' }, parse);
  app.addContentTypeParser(OTHER_JSON_TYPES, { parseAs: 'buffer' }, parse);
}

function showStatsOf(request: FastifyRequest): boolean {
  const value = (request.query as Record<string, unknown>).showStats;
  return typeof value === 'string' && value.toLowerCase() === 'true';
}

function queryOf(request: FastifyRequest): Record<string, unknown> {
  return request.query as Record<string, unknown>;
}

export async function startSentiment(given: Partial<SentimentOptions> & RuntimeExtras & { env?: NodeJS.ProcessEnv } = {}): Promise<RunningComponent> {
  const options = withDefaults(sentimentOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'sentiment');
  const defaultVersion = containerModelVersion(options.modelVersion);
  const tls = await resolveOptionalTls(options);
  const connection = await openBillingConnection({
    component: 'sentiment',
    kind: 'sentiment',
    containerVersion: CONTAINER_VERSION,
    options,
    logger,
    env: given.env,
  });
  let pool: ScorerPool;
  try {
    const ngramDir = options.model ? resolve(options.model) : DEFAULT_MODEL_DIR;
    pool = await ScorerPool.start({ ngramDir, encoderDir: ENCODER_MODEL_DIR, preload: defaultVersion }, options.workers);
  } catch (err) {
    await connection.close();
    throw err;
  }
  const supported = servedLanguages(options.unmeasuredLanguages);
  const scorers = new Map<string, LanguageScorer>(supported.map((language) => [language, (texts, scoreOptions) => pool.score(language, texts, scoreOptions)]));
  const { maxDocumentGraphemes } = options;
  const context = { supported, maxDocumentGraphemes };

  const metrics = new ComponentMetrics('sentiment');
  const scoredDocuments = metrics.counter('sentiment_documents_total', 'documents scored (billed as Text Analytics documents)');
  /** Scores the documents and records their usage for billing, whichever API asked. */
  const analyze = async (
    documents: unknown,
    maxDocuments: number,
    asked: { sentences: boolean; opinions?: boolean; modelVersion: ModelVersion | null },
    emptyCode?: string,
  ): Promise<AnalyzedBatch> => {
    const modelVersion = asked.modelVersion ?? defaultVersion;
    const batch = await analyzeDocuments(parseDocuments(documents, maxDocuments, emptyCode), {
      maxDocumentGraphemes,
      scorers,
      sentences: asked.sentences,
      opinions: asked.opinions,
      modelVersion,
    });
    connection.record({ [SENTIMENT_METERS.documents]: batch.usage.documents, [SENTIMENT_METERS.transactions]: batch.usage.transactions });
    scoredDocuments.inc(batch.usage.documents);
    return batch;
  };
  const v3Context = (parameters: V3Parameters, wording = V3_WORDING): AnswerContext => ({ ...context, parameters, wording });

  const app = createHttpServer({ logger, tls, bodyLimit: options.maxRequestBytes, ready: () => connection.ready, metrics });
  acceptJsonBodies(app);
  registerContainerSurface(app, {
    connection,
    title: 'Sentiment (Text Analytics v2, v3 and the Language API)',
    version: CONTAINER_VERSION,
    paths: sentimentPaths,
    schemas: sentimentSchemas,
  });
  const v2Gate = billingGate(connection, refusalBody('v2'));
  const v3Gate = billingGate(connection, refusalBody('v3'));
  for (const version of ['v2.0', 'v2.1']) {
    app.post(`/text/analytics/${version}/sentiment`, { preHandler: v2Gate }, async (request) => {
      const batch = await analyze(documentsOf(request.body), options.maxDocuments, { sentences: false, modelVersion: null });
      return answerV2(batch, { ...context, showStats: showStatsOf(request) });
    });
  }
  for (const version of ['v3.0', 'v3.1'] as const) {
    app.post(`/text/analytics/${version}/sentiment`, { preHandler: v3Gate }, async (request) => {
      const parameters = v3Parameters(queryOf(request), version);
      const batch = await analyze(documentsOf(request.body), options.maxDocumentsV3, {
        sentences: true,
        opinions: parameters.opinionMining,
        modelVersion: parameters.modelVersion,
      });
      return sentimentResults(batch, v3Context(parameters));
    });
  }
  // "::" is fastify's way of writing a literal colon in a path.
  app.post('/language/::analyze-text', { preHandler: v3Gate }, async (request) => {
    const { documents, parameters } = parseAnalyzeText(request.body, queryOf(request));
    const batch = await analyze(
      documents,
      options.maxDocumentsV3,
      { sentences: true, opinions: parameters.opinionMining, modelVersion: parameters.modelVersion },
      'MissingInputDocuments',
    );
    return { kind: 'SentimentAnalysisResults', results: sentimentResults(batch, v3Context(parameters, LANGUAGE_WORDING)) };
  });
  app.setNotFoundHandler(async (request, reply) => {
    const path = request.url.split('?')[0]!;
    return sendWireAnswer(reply, notFound(dialectOf(path), `${request.method} ${path.slice(0, 200)}`));
  });
  installErrorHandler(app, { logger, toWire: (error, request) => toWireError(error, dialectOf(request.url), options.maxRequestBytes) });

  let url: string;
  try {
    url = await listen(app, { host: options.host, port: options.port, component: 'sentiment' });
  } catch (err) {
    await Promise.all([pool.close(), connection.close()]);
    throw err;
  }
  logger.info(`Now listening on: ${url}`);
  return {
    urls: [
      { label: 'Text Analytics v2 sentiment', url: `${url}/text/analytics/v2.0/sentiment` },
      { label: 'Text Analytics v3.1 sentiment', url: `${url}/text/analytics/v3.1/sentiment` },
      { label: 'Language API (SentimentAnalysis)', url: `${url}/language/:analyze-text?api-version=2023-04-01` },
      { label: 'API description', url: `${url}/swagger` },
      { label: 'billing status', url: `${url}/status` },
    ],
    caCertPath: tls?.caCertPath ?? null,
    close: async () => {
      await app.close();
      await Promise.all([pool.close(), connection.close()]);
    },
  };
}
