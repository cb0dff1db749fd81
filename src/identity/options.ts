/** The identity component's options, apart from its servers so the CLI can list them without loading them. */
import { commonOptions, portOption, tlsOptions } from '../common/config.ts';
import { ISSUER_STYLES } from './issuer.ts';
import { MAX_TOKEN_LIFETIME_SECONDS } from './keys.ts';

export const identityOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(9440, 'HTTPS port of the token issuer (0 = any free port)'),
  imdsPort: portOption(9441, 'plain HTTP port of the managed identity endpoint (0 = any free port)'),
  directory: {
    type: 'string',
    default: '',
    description: 'directory file, JSON or YAML (default: <data-dir>/identity/directory.json, made on first start)',
  },
  issuerStyle: {
    type: 'string',
    default: 'cloud',
    choices: ISSUER_STYLES,
    description: "token `iss`: the real cloud strings (sts.windows.net / login.microsoftonline.com) or this server's origin",
  },
  tokenLifetime: {
    type: 'integer',
    default: 3599,
    min: 60,
    max: MAX_TOKEN_LIFETIME_SECONDS,
    description: 'lifetime of client credentials tokens, seconds',
  },
  managedIdentityTokenLifetime: {
    type: 'integer',
    default: 86399,
    min: 60,
    max: MAX_TOKEN_LIFETIME_SECONDS,
    description: 'lifetime of managed identity tokens, seconds (the real IMDS gives 24 h)',
  },
  signingThreads: {
    type: 'integer',
    default: 0,
    min: 0,
    max: 256,
    description: 'worker threads that sign tokens (0 = one per core)',
  },
  identityHeader: {
    type: 'string',
    default: '',
    description: 'App Service IDENTITY_HEADER secret (default: made on first start, kept in the data dir)',
  },
} as const;
