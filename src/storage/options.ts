/** The blob endpoint's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption, tlsOptions } from '../common/config.ts';
import { ISSUER_STYLES } from '../identity/issuer.ts';
import { DEFAULT_STORAGE_ACCOUNT } from '../identity/directory.ts';

export const storageOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(10000, 'HTTPS port (0 = any free port)'),
  httpPort: {
    type: 'integer',
    default: -1,
    min: -1,
    max: 65535,
    description: 'also serve plain HTTP on this port (Shared Key only: bearer tokens need HTTPS); -1 = off',
  },
  account: { type: 'string', default: DEFAULT_STORAGE_ACCOUNT, description: 'the default storage account, made on first start' },
  authorityHost: {
    type: 'string',
    default: 'https://127.0.0.1:9440',
    description: 'origin of the identity token issuer (for local-style issuers and the 401 challenge)',
  },
  issuerStyle: { type: 'string', default: 'cloud', choices: ISSUER_STYLES, description: 'issuer strings the tokens carry, as identity --issuer-style' },
  jwksUri: { type: 'string', default: '', description: "verify tokens with this JWKS URL (default: the data dir's identity signing keys)" },
  directory: { type: 'string', default: '', description: "identity directory file, when identity runs with --directory (default: the data dir's)" },
  maxBlobSize: { type: 'integer', default: 2 * 1024 ** 3, min: 1, description: 'largest blob, bytes' },
  maxBlockSize: { type: 'integer', default: 256 * 1024 ** 2, min: 1, description: 'largest block of Put Block, bytes' },
} as const;
