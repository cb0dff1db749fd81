/**
 * The sentiment container (spec §1, §4.3, §4.12; reference §3): Text
 * Analytics v2.0 and v2.1 `POST /text/analytics/v2.x/sentiment` on port 5000,
 * scoring with the model this project trains (models/sentiment-en), behind the
 * cognitive containers' billing contract.
 */
import { resolve } from 'node:path';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { createLogger } from '../common/log.ts';
import { PACKAGE_ROOT } from '../common/models.ts';
import { billingGate, CONTAINER_KINDS, openBillingConnection, registerContainerSurface } from '../cognitive/index.ts';
import { analyzeSentiment, type LanguageScorer } from './analyze.ts';
import { badRequest, MESSAGES, refusalBody, toWireError } from './errors.ts';
import { sentimentPaths, sentimentSchemas } from './openapi.ts';
import { sentimentOptions } from './options.ts';
import { ScorerPool } from './scorer.ts';
import { V2_LANGUAGES } from './lexicons.ts';

export const CONTAINER_VERSION = '2.1.0';
export const DEFAULT_MODEL_DIR = resolve(PACKAGE_ROOT, 'models', 'sentiment-en');
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

export async function startSentiment(given: Partial<SentimentOptions> & RuntimeExtras & { env?: NodeJS.ProcessEnv } = {}): Promise<RunningComponent> {
  const options = withDefaults(sentimentOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'sentiment');
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
    pool = await ScorerPool.start(options.model ? resolve(options.model) : DEFAULT_MODEL_DIR, options.workers);
  } catch (err) {
    await connection.close();
    throw err;
  }
  const scorers = new Map<string, LanguageScorer>(V2_LANGUAGES.map((language) => [language, (texts, max) => pool.score(language, texts, max)]));
  const limits = { maxDocuments: options.maxDocuments, maxDocumentGraphemes: options.maxDocumentGraphemes };

  const metrics = new ComponentMetrics('sentiment');
  const documents = metrics.counter('sentiment_documents_total', 'documents scored (billed as Text Analytics documents)');
  const app = createHttpServer({ logger, bodyLimit: options.maxRequestBytes, metrics });
  acceptJsonBodies(app);
  registerContainerSurface(app, {
    connection,
    title: 'Sentiment (Text Analytics v2)',
    version: CONTAINER_VERSION,
    paths: sentimentPaths,
    schemas: sentimentSchemas,
  });
  const gate = billingGate(connection, refusalBody);
  for (const version of ['v2.0', 'v2.1']) {
    app.post(`/text/analytics/${version}/sentiment`, { preHandler: gate }, async (request) => {
      const { result, usage } = await analyzeSentiment(request.body, { limits, scorers, showStats: showStatsOf(request) });
      connection.record({ [SENTIMENT_METERS.documents]: usage.documents, [SENTIMENT_METERS.transactions]: usage.transactions });
      documents.inc(usage.documents);
      return result;
    });
  }
  app.setNotFoundHandler(async (request, reply) =>
    reply.code(404).send({ code: 'NotFound', message: `No operation at ${request.method} ${request.url.split('?')[0]!.slice(0, 200)}.` }),
  );
  installErrorHandler(app, { logger, toWire: (error) => toWireError(error, options.maxRequestBytes) });

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
      { label: 'API description', url: `${url}/swagger` },
      { label: 'billing status', url: `${url}/status` },
    ],
    close: async () => {
      await app.close();
      await Promise.all([pool.close(), connection.close()]);
    },
  };
}
