import { defineComponent } from '../common/component.ts';
import { identityCommands } from './cli.ts';
import { identityOptions, startIdentity } from './start.ts';

export const identity = defineComponent({
  name: 'identity',
  summary: 'Identity: client-credentials token issuer (HTTPS), managed identity endpoint (IMDS), JWKS, directory (§4.8, §4.9)',
  options: identityOptions,
  start: startIdentity,
  subcommands: identityCommands,
});
