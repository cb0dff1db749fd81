/** The script-trigger server's options, apart from its server so the CLI can list them without loading it or the ACME client. */
import { commonOptions, portOption, tlsOptions, type OptionSchema } from '../common/config.ts';

export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export const scriptsOptions = {
  ...commonOptions,
  ...tlsOptions,
  port: portOption(8080, 'HTTP port when TLS is off (0 = any free port)'),
  httpsPort: portOption(443, 'HTTPS port when TLS is on (--tls, --tls-cert or --acme)'),
  httpPort: portOption(80, 'with TLS: the HTTP port that answers ACME challenges and redirects everything else to HTTPS'),
  tls: { type: 'boolean', default: false, description: 'serve HTTPS (with --tls-cert/--tls-key, else the local CA certificate)' },
  scriptsDir: { type: 'string', default: '', description: 'folder of scripts to serve (default <data-dir>/scripts, made with two examples)' },
  htpasswd: { type: 'string', default: '', description: 'htpasswd file; when set, every call needs HTTP basic authentication' },
  realm: { type: 'string', default: 'offcloud scripts', description: 'basic authentication realm' },
  acme: { type: 'string', default: '', description: 'DNS name to get a certificate for by ACME HTTP-01 (turns TLS on)' },
  acmeDirectory: { type: 'string', default: LETS_ENCRYPT_DIRECTORY, description: 'ACME directory URL (staging or a private CA)' },
  acmeEmail: { type: 'string', default: '', description: 'contact e-mail for the ACME account' },
  acmeCaFile: { type: 'string', default: '', description: 'PEM CA file to trust for the ACME directory (a private ACME server)' },
  timeout: { type: 'integer', default: 120, min: 1, max: 86_400, description: 'seconds a script may run (a script can set its own)' },
  maxRunning: { type: 'integer', default: 16, min: 1, max: 10_000, description: 'scripts running at once; more are answered 503' },
  streamStderr: { type: 'boolean', default: false, description: 'send stderr lines as `event: stderr` (else only logged)' },
  bodyLimit: { type: 'integer', default: 1024 * 1024, min: 1, max: 1024 ** 3, description: 'largest request body (bytes), passed to stdin' },
} as const satisfies OptionSchema;
