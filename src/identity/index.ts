import { defineComponent } from '../common/component.ts';
import { identityCommands } from './cli.ts';
import { identityOptions } from './options.ts';

export const identity = defineComponent({
  name: 'identity',
  summary: 'Identity: client-credentials token issuer (HTTPS), managed identity endpoint (IMDS), JWKS, directory (§4.8, §4.9)',
  options: identityOptions,
  start: async (options) => (await import('./start.ts')).startIdentity(options),
  subcommands: identityCommands,
});
