/**
 * The face detection container (§1, §4.4): POST /face/v1.0/detect on port
 * 5000, and beside it /face/v1.2/detect (and its previews), which
 * @azure-rest/ai-vision-face calls, with raw image bytes or a JSON
 * `{"url"}`, answered from real models running in worker threads.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { resolveOptionalTls } from '../common/tls.ts';
import { ComponentMetrics } from '../common/metrics.ts';
import { createLogger } from '../common/log.ts';
import { modelSearchPath, resolveModelFile } from '../common/models.ts';
import { StartupError } from '../common/errors.ts';
import { HAIR_HEADS_PATH, readHeadsFile, type HeadsFile } from './hair/heads.ts';
import { EYEGLASSES, FACE_DETECTOR, MASK_MODEL, SUNGLASSES, type ModelFile } from '../models/catalogue.ts';
import {
  billingGate,
  CONTAINER_KINDS,
  openBillingConnection,
  registerContainerSurface,
  type BillingConnection,
  type OpenApiPaths,
} from '../cognitive/index.ts';
import { DETECTION_MODELS, parseDetectOptions, RECOGNITION_MODELS } from './detect-request.ts';
import { detectFaces, MAX_IMAGE_BYTES } from './detect.ts';
import { createDownloader, downloadImage } from './download.ts';
import { badArgument, FaceApiError, invalidUrl, toWireError } from './errors.ts';
import { faceOptions } from './options.ts';
import { ModelPool } from './pool.ts';
import type { ModelPaths } from './models/index.ts';
import { FACE_V1_0, FACE_V1_2, withHairHeads, type FaceApiProfile, type UnsupportedAttributes } from './attributes.ts';

export type FaceOptions = OptionValues<typeof faceOptions>;

/** A `{"url"}` body is a few hundred bytes; a generous limit still stops abuse early. */
const JSON_BODY_LIMIT = 64 * 1024;
const DETECT_PATH = '/face/v1.0/detect';
/**
 * Every detect route and the API version it speaks (v1.0 answers facialHair
 * and hair when the container has hair heads); the previews are the other
 * apiVersion values the v1.2 SDK offers.
 */
function detectRoutes(hairHeads: boolean): [string, FaceApiProfile][] {
  return [
    [DETECT_PATH, hairHeads ? withHairHeads(FACE_V1_0) : FACE_V1_0],
    ['/face/v1.2/detect', FACE_V1_2],
    ['/face/v1.2-preview.1/detect', FACE_V1_2],
    ['/face/v1.1-preview.1/detect', FACE_V1_2],
  ];
}
const FACE_CONTAINER_VERSION = '1.0.0';

const flagParameter = (name: string, fallback: boolean, description: string) => ({
  name,
  in: 'query',
  schema: { type: 'boolean', default: fallback },
  description,
});

const detectOperation = (api: FaceApiProfile) => ({
  post: {
    summary: `Detect faces (Face ${api.version}): rectangles, 27 landmarks and attributes from real models`,
    parameters: [
      flagParameter('returnFaceId', true, 'return a faceId (GUID) per face'),
      flagParameter('returnFaceLandmarks', false, 'return the 27 landmarks'),
      {
        name: 'returnFaceAttributes',
        in: 'query',
        schema: { type: 'string' },
        description: `comma-separated; supported: ${api.supported.join(', ')}`,
      },
      { name: 'recognitionModel', in: 'query', schema: { type: 'string', enum: [...RECOGNITION_MODELS] } },
      flagParameter('returnRecognitionModel', false, 'echo the recognition model'),
      { name: 'detectionModel', in: 'query', schema: { type: 'string', enum: [...DETECTION_MODELS] } },
      { name: 'faceIdTimeToLive', in: 'query', schema: { type: 'integer', minimum: 60, maximum: 86400, default: 86400 } },
    ],
    requestBody: {
      required: true,
      content: {
        'application/json': { example: { url: 'https://example.com/photo.jpg' } },
        'application/octet-stream': { schema: { type: 'string', format: 'binary' } },
      },
    },
    responses: {
      '200': { description: 'The faces, largest first (at most 100)' },
      '400': { description: '{"error":{"code","message"}}: BadArgument, InvalidURL, InvalidImage, InvalidImageSize' },
      '415': { description: 'Content-Type other than application/octet-stream or application/json' },
      '503': { description: 'Billing unreachable (Retry-After) or models still loading' },
    },
  },
});

const openApiPaths = (routes: [string, FaceApiProfile][]): OpenApiPaths => Object.fromEntries(routes.map(([path, api]) => [path, detectOperation(api)]));

/** The hair heads: --hair-model's file, else face-hair/face-hair.json in a models folder, else none (facialHair and hair refused). */
function hairHeadsOf(options: FaceOptions): { file: HeadsFile; path: string } | null {
  const path = options.hairModel
    ? resolve(options.hairModel)
    : modelSearchPath(options.dataDir)
        .map((dir) => resolve(dir, HAIR_HEADS_PATH))
        .find((candidate) => existsSync(candidate));
  if (!path) return null;
  try {
    return { file: readHeadsFile(path), path };
  } catch (err) {
    throw new StartupError(`hair heads ${path} (--hair-model): ${(err as Error).message}; train them with \`offcloud models train face-hair\``);
  }
}

function modelPaths(options: FaceOptions): ModelPaths {
  const find = (file: ModelFile, explicit: string) => resolveModelFile({ ...file, explicit, dataDir: options.dataDir });
  return {
    detector: find(FACE_DETECTOR, options.detectorModel),
    eyeglasses: find(EYEGLASSES, options.eyeglassesModel),
    sunglasses: find(SUNGLASSES, options.sunglassesModel),
    mask: find(MASK_MODEL, options.maskModel),
  };
}

/** The running container; `billing` lets tests drive the usage reports. */
export interface RunningFace extends RunningComponent {
  billing: BillingConnection;
}

export async function startFace(given: Partial<FaceOptions> & RuntimeExtras = {}): Promise<RunningFace> {
  const options = withDefaults(faceOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'face');
  const paths = modelPaths(options);
  const hairHeads = hairHeadsOf(options);
  const routes = detectRoutes(hairHeads !== null);
  const tls = await resolveOptionalTls(options);
  // Eula/Billing/ApiKey first: a container missing them must not spend seconds loading models.
  const billing = await openBillingConnection({ component: 'face', kind: 'face', containerVersion: FACE_CONTAINER_VERSION, options, logger });
  let pool: ModelPool | null = null;
  const downloader = createDownloader({ allowPrivate: options.urlAllowPrivate });
  const metrics = new ComponentMetrics('face');
  const analysed = metrics.histogram('face_detect_seconds', 'time to detect and measure the faces of one image (download excluded)');
  const found = metrics.counter('face_faces_detected_total', 'faces answered by detect');
  const app = createHttpServer({ logger, tls, bodyLimit: MAX_IMAGE_BYTES, ready: () => pool !== null && billing.ready, metrics });
  registerContainerSurface(app, { connection: billing, title: 'Face (v1.0 and v1.2)', version: '1.2', paths: openApiPaths(routes) });

  // Only the two bodies the API defines; any other media type is fastify's 415, mapped below.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/octet-stream', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  app.addContentTypeParser('application/json', { parseAs: 'string', bodyLimit: JSON_BODY_LIMIT }, (_request, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(badArgument('JSON parsing error.'));
    }
  });

  const detect = (api: FaceApiProfile) => async (request: FastifyRequest, reply: FastifyReply) => {
    const detectOptions = parseDetectOptions(request.query as Record<string, string>, options.unsupportedAttributes as UnsupportedAttributes, api);
    if (!pool) throw new FaceApiError(503, 'InternalServerError', 'The models are still loading.');
    let image: Uint8Array;
    if (Buffer.isBuffer(request.body)) {
      image = request.body;
    } else if (request.body === undefined || request.body === null) {
      image = Buffer.alloc(0);
    } else {
      const body = request.body as Record<string, unknown>;
      if (typeof body !== 'object' || Array.isArray(body)) throw badArgument('Invalid request body.');
      if (!('url' in body)) throw invalidUrl();
      image = await downloadImage(body.url, { maxBytes: MAX_IMAGE_BYTES, timeoutMs: options.urlTimeoutMs }, downloader);
    }
    const timer = analysed.startTimer();
    const faces = await detectFaces(pool, image, detectOptions);
    timer();
    found.inc(faces.length);
    // One transaction per image analysed, as the real service bills detect; counts only.
    billing.record({ [CONTAINER_KINDS.face.billedMeter]: 1 });
    return reply.send(faces);
  };
  for (const [path, api] of routes) app.post(path, { preHandler: billingGate(billing) }, detect(api));

  app.setNotFoundHandler(async (request) => {
    throw new FaceApiError(404, 'NotFound', `No resource at ${request.method} ${request.url.split('?')[0]}.`);
  });
  installErrorHandler(app, { logger, toWire: toWireError });

  const url = await listen(app, { host: options.host, port: options.port, component: 'face' });
  logger.info({ url, workers: options.workers, hairHeads: hairHeads?.path ?? null }, 'face listening; loading models');
  try {
    pool = await ModelPool.start(options.workers, { paths, hairHeads: hairHeads?.file ?? null }, logger);
  } catch (err) {
    await app.close();
    await billing.close();
    await downloader.close();
    throw err;
  }
  logger.info('face models loaded');
  return {
    urls: [
      { label: 'Face detect (v1.0)', url: `${url}${DETECT_PATH}` },
      { label: 'Face detect (v1.2)', url: `${url}/face/v1.2/detect` },
      { label: 'Face status / swagger', url: `${url}/status` },
    ],
    caCertPath: tls?.caCertPath ?? null,
    billing,
    close: async () => {
      await app.close();
      await billing.close();
      await pool?.close();
      await downloader.close();
    },
  };
}
