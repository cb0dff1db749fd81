import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen, sendWireAnswer } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { add, InvalidOperandError } from './add.ts';
import { toWireError } from './errors.ts';
import { calculatorOptions } from './options.ts';

export type CalculatorOptions = OptionValues<typeof calculatorOptions>;

const TEXT = 'text/plain; charset=utf-8';

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidOperandError(segment.slice(0, 64), 'broken percent-encoding');
  }
}

/** GET /add/<a>/<b> → the sum as plain text (§4.6). */
export async function startCalculator(given: Partial<CalculatorOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(calculatorOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'calculator');
  const app = createHttpServer({
    logger,
    bodyLimit: 16 * 1024,
    // A URL fastify cannot decode (`/add/%zz/1`) is a bad operand too.
    frameworkErrors: (error, _request, reply) => void sendWireAnswer(reply, toWireError(new InvalidOperandError('', error.message))),
  });

  app.route({
    method: 'GET',
    url: '/add/*',
    exposeHeadRoute: false,
    handler: async (request, reply) => {
      const rest = request.url.slice('/add/'.length).split('?')[0] ?? '';
      const segments = rest.split('/');
      if (segments.length !== 2)
        return reply
          .code(404)
          .type(TEXT)
          .send(`not found: ${request.url.split('?')[0]}`);
      const [a, b] = segments.map(decodeSegment) as [string, string];
      return reply.type(TEXT).send(add(a, b));
    },
  });
  app.route({
    method: ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'],
    url: '/add/*',
    handler: async (_request, reply) => reply.code(405).header('allow', 'GET').type(TEXT).send('method not allowed; use GET'),
  });
  app.setNotFoundHandler(async (request, reply) =>
    reply
      .code(404)
      .type(TEXT)
      .send(`not found: ${request.url.split('?')[0]}`),
  );
  installErrorHandler(app, { logger, toWire: toWireError });

  const url = await listen(app, { host: options.host, port: options.port, component: 'calculator' });
  logger.info({ url }, 'calculator listening');
  return {
    urls: [{ label: 'REST', url: `${url}/add/{a}/{b}` }],
    facts: { calculator: { url } },
    close: () => app.close(),
  };
}
