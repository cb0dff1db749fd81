import { readFile } from 'node:fs/promises';
import { ConfigError } from './errors.ts';
import { ensureLocalCa } from './ca.ts';
import { DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS } from './config.ts';

export interface TlsMaterial {
  cert: string;
  key: string;
  /** The CA file a client trusts to reach this server, when it is ours. */
  caCertPath: string | null;
  /** ms a client has to finish its handshake (--tls-handshake-timeout) before its connection is closed. */
  handshakeTimeout: number;
  /** Ask clients for a certificate, without requiring or checking one (the hub checks its X.509 devices' itself). */
  requestClientCertificate?: boolean;
}

/** The node TLS server options that ask for a client certificate and leave its checks to the caller. */
export const CLIENT_CERTIFICATE_OPTIONS = { requestCert: true, rejectUnauthorized: false } as const;

/**
 * The certificate a TLS server presents: the user's files when both
 * --tls-cert and --tls-key are given, otherwise the local CA's leaf.
 */
export async function resolveTls(options: {
  tlsCert: string;
  tlsKey: string;
  dataDir: string;
  tlsNames?: readonly string[];
  tlsHandshakeTimeout?: number;
}): Promise<TlsMaterial> {
  const handshakeTimeout = options.tlsHandshakeTimeout ?? DEFAULT_TLS_HANDSHAKE_TIMEOUT_MS;
  if (options.tlsCert || options.tlsKey) {
    if (!options.tlsCert || !options.tlsKey) {
      throw new ConfigError('--tls-cert and --tls-key must be given together');
    }
    const read = async (path: string, flag: string) => {
      try {
        return await readFile(path, 'utf8');
      } catch (err) {
        throw new ConfigError(`cannot read ${flag} ${path}: ${(err as Error).message}`);
      }
    };
    return { cert: await read(options.tlsCert, '--tls-cert'), key: await read(options.tlsKey, '--tls-key'), caCertPath: null, handshakeTimeout };
  }
  const ca = await ensureLocalCa(options.dataDir, options.tlsNames);
  return { cert: ca.cert, key: ca.key, caCertPath: ca.caCertPath, handshakeTimeout };
}

/** The TLS material of a server whose HTTPS is optional: on with `tls`, or when certificate files are given; null for plain HTTP. */
export async function resolveOptionalTls(options: {
  tls: boolean;
  tlsCert: string;
  tlsKey: string;
  dataDir: string;
  tlsNames?: readonly string[];
  tlsHandshakeTimeout?: number;
}): Promise<TlsMaterial | null> {
  return options.tls || options.tlsCert || options.tlsKey ? resolveTls(options) : null;
}
