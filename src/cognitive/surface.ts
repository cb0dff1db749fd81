/**
 * The HTTP surface every cognitive container shares (reference §3.4): GET /
 * (home page), GET /status (billing status), GET /swagger (a browsable page)
 * with the OpenAPI document at /swagger/v1/swagger.json, and the gate that
 * refuses scoring while billing does not say Valid. /health and /ready come
 * from createHttpServer.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { BillingConnection, BillingRefusal } from './billing-connection.ts';

/** An OpenAPI 3 operation, as much of it as the page and the document use. */
export interface OpenApiOperation {
  summary: string;
  description?: string;
  parameters?: object[];
  requestBody?: { required?: boolean; content: Record<string, { schema?: object; example?: unknown }> };
  responses: Record<string, { description: string; content?: Record<string, { schema?: object; example?: unknown }> }>;
}
export type OpenApiPaths = Record<string, Partial<Record<'get' | 'post', OpenApiOperation>>>;

export interface ContainerSurfaceOptions {
  connection: BillingConnection;
  /** e.g. "Sentiment (Text Analytics v2)". */
  title: string;
  version: string;
  /** The container's own endpoints; the shared ones are added here. */
  paths: OpenApiPaths;
  /** Extra schemas the paths refer to with `#/components/schemas/<name>`. */
  schemas?: Record<string, object>;
}

export const OPENAPI_PATH = '/swagger/v1/swagger.json';

const sharedPaths: OpenApiPaths = {
  '/status': {
    get: {
      summary: 'Billing status: whether the ApiKey given at start is valid, without scoring anything',
      responses: {
        '200': {
          description: 'Billing status',
          content: { 'application/json': { example: { apiStatus: 'Valid', apiStatusMessage: 'Api Key is valid, no action needed.' } } },
        },
      },
    },
  },
  '/ready': {
    get: {
      summary: 'Ready to accept a query against the model',
      responses: { '200': { description: 'ready' }, '503': { description: 'starting, or the billing endpoint cannot be reached' } },
    },
  },
  '/health': { get: { summary: 'The process is alive', responses: { '200': { description: 'alive' } } } },
  '/swagger': { get: { summary: 'This page', responses: { '200': { description: 'HTML' } } } },
  [OPENAPI_PATH]: { get: { summary: 'The OpenAPI document of this container', responses: { '200': { description: 'OpenAPI 3 JSON' } } } },
};

export function openApiDocument(options: Pick<ContainerSurfaceOptions, 'title' | 'version' | 'paths' | 'schemas'>): object {
  return {
    openapi: '3.0.3',
    info: { title: options.title, version: options.version },
    paths: { ...options.paths, ...sharedPaths },
    ...(options.schemas ? { components: { schemas: options.schemas } } : {}),
  };
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** One section per operation; POST operations with a JSON example get a form that sends it. */
function swaggerPage(title: string, paths: OpenApiPaths): string {
  const sections = Object.entries(paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation], index) => {
      const id = `${index}-${path.replace(/[^A-Za-z0-9]/g, '_')}`;
      const content = operation.requestBody?.content ?? {};
      const [mediaType, media] = Object.entries(content)[0] ?? [];
      const tryIt =
        method === 'post' && mediaType
          ? `<textarea id="body${id}" rows="8" cols="90">${escapeHtml(JSON.stringify(media?.example ?? {}, null, 2))}</textarea><br>` +
            `<button onclick="tryIt('${id}','${escapeHtml(path)}','${escapeHtml(mediaType)}')">Try it out</button>`
          : `<button onclick="tryIt('${id}','${escapeHtml(path)}')">Try it out</button>`;
      return `<section><h2><code>${method.toUpperCase()} ${escapeHtml(path)}</code></h2><p>${escapeHtml(operation.summary)}</p>${tryIt}<pre id="out${id}"></pre></section>`;
    }),
  );
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(title)}</title>
<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}section{border-top:1px solid #ccc;padding:.5em 0}pre{background:#f4f4f4;white-space:pre-wrap}</style>
</head><body><h1>${escapeHtml(title)}</h1><p>OpenAPI document: <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a></p>
${sections.join('\n')}
<script>
async function tryIt(id, path, type) {
  const out = document.getElementById('out' + id);
  const init = type ? { method: 'POST', headers: { 'content-type': type, accept: 'application/json' }, body: document.getElementById('body' + id).value } : {};
  const response = await fetch(path, init);
  out.textContent = response.status + ' ' + response.statusText + '\\n' + await response.text();
}
</script></body></html>`;
}

/** Adds GET /, /status, /swagger and the OpenAPI document to the container's server. */
export function registerContainerSurface(app: FastifyInstance, options: ContainerSurfaceOptions): void {
  const document = openApiDocument(options);
  const page = swaggerPage(options.title, { ...options.paths, ...sharedPaths });
  app.get('/', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .send(
        `<!doctype html><html><head><meta charset="utf-8"><title>${escapeHtml(options.title)}</title></head><body><h1>${escapeHtml(options.title)}</h1><p>The container is running. <a href="/swagger">API description</a> · <a href="/status">billing status</a></p></body></html>`,
      ),
  );
  app.get('/status', async () => options.connection.statusReport());
  app.get('/swagger', async (_request, reply) => reply.type('text/html; charset=utf-8').send(page));
  app.get('/swagger/', async (_request, reply) => reply.redirect('/swagger'));
  app.get(OPENAPI_PATH, async () => document);
}

/** The refusal body when the component gives no shape of its own: `{error:{code,message}}`. */
export function defaultRefusalBody(refusal: BillingRefusal): object {
  return { error: { code: refusal.code, message: refusal.message } };
}

/**
 * A preHandler for scoring routes: while billing is not Valid it answers the
 * refusal's status (503 with Retry-After when waiting can help) in the
 * component's own error shape, and the route's handler never runs.
 */
export function billingGate(connection: BillingConnection, formatRefusal: (refusal: BillingRefusal) => object = defaultRefusalBody) {
  return async (_request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const refusal = connection.refusal();
    if (!refusal) return undefined;
    if (refusal.retryAfter !== undefined) reply.header('retry-after', String(refusal.retryAfter));
    return reply.code(refusal.statusCode).send(formatRefusal(refusal));
  };
}
