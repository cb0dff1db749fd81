/**
 * `gateway`, the Kong-compatible gateway in front of the user API (src/users)
 * and the calculator. Under `offcloud up` it takes both backends' URLs from
 * the components started before it.
 *
 * Layers, each importing only those below it: config/ (Kong's declarative
 * format and entities), plugins/, proxy/ (the compiled configuration and
 * what is done per request), http/ (the only code that touches sockets),
 * processes/ (one proxy per process, worker processes).
 */
import { defineComponent } from '../common/component.ts';
import { UsageError } from '../common/errors.ts';
import { gatewayOptions } from './options.ts';

const PARSE_USAGE = 'offcloud gateway parse <kong.yml|kong.json>';

export const gateway = defineComponent({
  name: 'gateway',
  summary:
    'Kong-compatible API gateway: declarative routes, cors, jwt, key-auth, basic-auth, acl, rate-limiting, request-transformer, prometheus (§4.7, §5, §7, §8)',
  options: gatewayOptions,
  start: async (options) => (await import('./server.ts')).startGateway(options),
  subcommands: {
    parse: {
      summary: 'check a Kong declarative file (format 1.1, 2.1 or 3.0) without starting anything (like `kong config parse`)',
      usage: PARSE_USAGE,
      // The file is checked for by name first, so a usage error loads nothing.
      run: async ([file, ...rest]) => {
        if (!file || rest.length) throw new UsageError(`usage: ${PARSE_USAGE}`);
        return (await import('./config/parse-command.ts')).parseDeclarativeFile(file);
      },
    },
  },
  wireUp({ users, calculator }) {
    return { ...(users && { usersUrl: users.usersUrl }), ...(calculator && { calculatorUrl: calculator.url }) };
  },
});
