/**
 * The user API backend behind the gateway (§4.7): GET /api/getusers returns
 * the stored users as JSON; GET /api/getusers/<id> one of them.
 */
import { withDefaults, type OptionValues, type RuntimeExtras } from '../common/config.ts';
import type { RunningComponent } from '../common/component.ts';
import { createHttpServer, installErrorHandler, listen } from '../common/http.ts';
import { createLogger } from '../common/log.ts';
import { toWireError } from './errors.ts';
import { usersOptions } from './options.ts';
import { findUser, loadUsers, usersFile } from './store.ts';

export type UsersOptions = OptionValues<typeof usersOptions>;

export async function startUsers(given: Partial<UsersOptions> & RuntimeExtras = {}): Promise<RunningComponent> {
  const options = withDefaults(usersOptions, given);
  const logger = given.logger ?? createLogger(options.logLevel, 'users');
  const users = await loadUsers(options.dataDir);
  const app = createHttpServer({ logger, bodyLimit: 16 * 1024 });
  const notAllowed = { message: 'method not allowed; use GET' };

  app.get('/api/getusers', async () => users);
  app.get<{ Params: { id: string } }>('/api/getusers/:id', async (request, reply) => {
    const user = findUser(users, request.params.id);
    return user ?? reply.code(404).send({ message: `no user with id ${JSON.stringify(request.params.id.slice(0, 40))}` });
  });
  app.route({
    method: ['POST', 'PUT', 'DELETE', 'PATCH'],
    url: '/api/getusers*',
    handler: async (_request, reply) => reply.code(405).header('allow', 'GET, HEAD').send(notAllowed),
  });
  app.setNotFoundHandler(async (request, reply) => reply.code(404).send({ message: `not found: ${request.url.split('?')[0]!.slice(0, 200)}` }));
  installErrorHandler(app, { logger, toWire: toWireError });

  const url = await listen(app, { host: options.host, port: options.port, component: 'users' });
  logger.info({ url, file: usersFile(options.dataDir), users: users.length }, 'user API listening');
  return {
    urls: [{ label: 'user API', url: `${url}/api/getusers` }],
    facts: { users: { usersUrl: `${url}/api/getusers` } },
    close: () => app.close(),
  };
}
