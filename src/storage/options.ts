/** The blob endpoint's options, apart from its server so the CLI can list them without loading it. */
import { commonOptions, portOption, tlsOptions } from '../common/config.ts';
import { DEFAULT_STORAGE_ACCOUNT, ISSUER_STYLES } from '../identity/public-names.ts';

/** Index changes a container's log holds, at least, before it is folded into blobs.json. */
export const DEFAULT_COMPACT_INDEX_AFTER = 1024;

export const storageOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(10000, 'plain HTTP port for Shared Key and SAS: the endpoint UseDevelopmentStorage=true expands to (0 = any free port)'),
  httpsPort: portOption(10443, 'HTTPS port (local CA) for bearer tokens (§4.10), Shared Key and SAS (0 = any free port)'),
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
  compactIndexAfter: {
    type: 'integer',
    default: DEFAULT_COMPACT_INDEX_AFTER,
    min: 1,
    description: "changes a container's blob index log holds before it is folded into one file (or its blob count, if more)",
  },
} as const;
