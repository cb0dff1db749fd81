/**
 * The scoring container (§4.1): POST /score with {"data": [1,3,224,224]}
 * answers {"result": [1000 probabilities], "time": seconds}. The body is read
 * into the model's input tensor chunk by chunk, as it arrives.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { ConfigError } from '../common/errors.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { createLogger, type Logger } from '../common/log.ts';
import { resolveModelFile } from '../common/models.ts';
import { scoreAnswer } from './answer.ts';
import { ImageClassifier } from './classifier.ts';
import { bodyTooLarge, notReady, ScoringError, toWireError } from './errors.ts';
import { DEFAULT_MODEL } from '../models/catalogue.ts';
import { OPEN_INFERENCE_MODEL_NAME, registerOpenInferenceRoutes } from './open-inference.ts';
import { scoringOptions, type InputScale, type ModelOutput } from './options.ts';
import { INPUT_LAYOUT, readTensorBody, TensorBodyStream, type ChannelTransform, type TensorBody } from './tensor-body.ts';

export type ScoringOptions = OptionValues<typeof scoringOptions>;

function channelValues(key: 'mean' | 'std', raw: string[]): number[] {
  const values = raw.map(Number);
  if (values.length !== 3 || values.some((v) => !Number.isFinite(v)) || (key === 'std' && values.some((v) => v <= 0))) {
    throw new ConfigError(`--${key} must be three ${key === 'std' ? 'positive ' : ''}numbers (R,G,B); got ${JSON.stringify(raw.join(','))}`);
  }
  return values;
}

/** Every request body reaches the handlers as raw bytes, whatever its content type (curl -d sends form-urlencoded). */
export function acceptRawBodies(app: FastifyInstance, bodyLimit: number): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit }, (_request, body, done) => done(null, body));
}

/**
 * Input arrays for the bodies being read, reused from one request to the
 * next: a new 0.6 MB Float32Array per request costs about 0.4 ms of fresh
 * zeroed pages. An array goes back only once its request is over (its run
 * done or its body refused); one that is never given back is simply collected.
 */
class InputArrays {
  private readonly free: Float32Array[] = [];

  constructor(
    private readonly size: number,
    private readonly kept: number,
  ) {}

  take(): Float32Array {
    return this.free.pop() ?? new Float32Array(this.size);
  }

  giveBack(values: Float32Array): void {
    if (this.free.length < this.kept) this.free.push(values);
  }
}

/**
 * POST /score bodies go into the tensor as their chunks arrive, so reading the
 * numbers overlaps receiving them, and no whole-body buffer is concatenated
 * and parsed afterwards. The checks are those of fastify's own body reading:
 * Content-Length over the limit, more bytes than the limit, fewer or more
 * bytes than Content-Length.
 */
function readTensorBodyStream(limit: number, pixels: () => ChannelTransform | undefined, inputs: InputArrays) {
  return (request: FastifyRequest, payload: NodeJS.ReadableStream, done: (err: Error | null, body?: TensorBody) => void): void => {
    const declared = Number(request.headers['content-length']);
    if (declared > limit) return done(bodyTooLarge(limit));
    const into = inputs.take();
    const stream = new TensorBodyStream(INPUT_LAYOUT, pixels(), into);
    let received = 0;
    const refuse = (err: Error): void => {
      inputs.giveBack(into);
      done(err);
    };
    const stop = (): void => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onEnd);
    };
    function onData(chunk: Buffer): void {
      received += chunk.length;
      if (received > limit) {
        stop();
        refuse(bodyTooLarge(limit));
        return;
      }
      stream.push(chunk);
    }
    function onEnd(err?: Error): void {
      stop();
      if (err) return refuse(Object.assign(err, { statusCode: 400 }));
      if (!Number.isNaN(declared) && received !== declared)
        return refuse(new ScoringError(400, 'BadRequest', `the body has ${received} bytes; Content-Length said ${declared}`));
      let body: TensorBody;
      try {
        body = stream.end();
      } catch (error) {
        return refuse(error as Error);
      }
      done(null, body);
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onEnd);
    payload.resume();
  };
}

export async function startScoring(given: Partial<ScoringOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(scoringOptions, given);
  const logger: Logger = given.logger ?? createLogger(options.logLevel, 'scoring');
  const mean = channelValues('mean', options.mean);
  const std = channelValues('std', options.std);
  const modelPath = resolveModelFile({ relativePath: DEFAULT_MODEL.relativePath, explicit: options.model || undefined, dataDir: options.dataDir });

  let classifier: ImageClassifier | null = null;
  const metrics = new ComponentMetrics('scoring');
  const scored = metrics.counter('scoring_images_scored_total', 'images scored by POST /score');
  const inference = metrics.histogram('scoring_inference_seconds', 'model run time per image');
  const app = createHttpServer({ logger, bodyLimit: options.maxBodyBytes, ready: () => classifier !== null, metrics });
  acceptRawBodies(app, options.maxBodyBytes);
  installErrorHandler(app, {
    logger,
    toWire: (error, request) => toWireError(error, options.maxBodyBytes, request.url.startsWith('/v2') ? 'open-inference' : 'envelope'),
  });
  const loaded = (): ImageClassifier => {
    if (!classifier) throw notReady('the model is still loading');
    return classifier;
  };

  // Its own scope, so that only POST /score gets the streaming body reader.
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    const inputs = new InputArrays(INPUT_LAYOUT.size, 4);
    scope.addContentTypeParser(
      '*',
      readTensorBodyStream(options.maxBodyBytes, () => classifier?.pixels, inputs),
    );
    scope.post<{ Body: TensorBody | undefined }>('/score', async (request, reply) => {
      try {
        const model = loaded();
        // No body at all (Content-Length: 0) reaches here without the reader.
        const classification = await model.classify(request.body ?? readTensorBody(Buffer.alloc(0)));
        scored.inc();
        inference.observe(classification.time);
        return reply.type('application/json; charset=utf-8').send(scoreAnswer(classification.result, classification.time));
      } finally {
        // The body's input array: the one it was read into as it arrived, or the whole-body reader's own.
        if (request.body) inputs.giveBack(request.body.values);
      }
    });
  });
  app.route({
    method: ['GET', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'],
    url: '/score',
    handler: async (_request, reply) => {
      reply.header('allow', 'POST');
      throw new ScoringError(405, 'MethodNotAllowed', 'use POST /score with {"data": [...]} of shape [1,3,224,224]');
    },
  });
  registerOpenInferenceRoutes(app, loaded);
  app.setNotFoundHandler(async (request) => {
    throw new ScoringError(404, 'NotFound', `no route ${request.method} ${request.url.split('?')[0]}; the scoring container serves POST /score`);
  });

  // Listen first so GET /ready can answer 503 while the model loads; start() resolves once it is ready.
  const url = await listen(app, { host: options.host, port: options.port, component: 'scoring' });
  try {
    classifier = await ImageClassifier.load({
      modelPath,
      threads: options.threads,
      inputScale: options.inputScale as InputScale,
      modelOutput: options.modelOutput as ModelOutput,
      mean,
      std,
    });
  } catch (err) {
    await app.close();
    throw err;
  }
  logger.info({ url, modelPath, logits: classifier.outputIsLogits }, 'scoring container ready');
  return {
    urls: [
      { label: 'POST /score', url: `${url}/score` },
      { label: 'open inference v2', url: `${url}/v2/models/${OPEN_INFERENCE_MODEL_NAME}/infer` },
    ],
    facts: { scoring: { url, modelPath } },
    details: [{ label: 'model', value: modelPath }],
    close: async () => {
      await app.close();
      await classifier?.close();
    },
  };
}
