/**
 * Certificates by ACME with HTTP-01 verification (§5, §8): the account key,
 * the certificate key and the issued chain live in <data-dir>/scripts/acme;
 * a stored certificate is reused while it is fresh and renewed before it
 * expires, without a restart (the HTTPS server swaps its secure context).
 */
import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import { join } from 'node:path';
import acme from 'acme-client';
import type { Logger } from 'pino';
import { ConfigError, StartupError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';

const DAY_MS = 86_400_000;
/** How often the stored certificate's age is checked. */
const RENEWAL_CHECK_MS = 12 * 3_600_000;
/** An order that has not finished by then fails (start-up) or is retried at the next check. */
const ORDER_TIMEOUT_MS = 5 * 60_000;

export interface AcmeSettings {
  domain: string;
  directoryUrl: string;
  email: string;
  /** PEM file of a CA to trust for the directory's HTTPS (a private ACME server); '' = the system's. */
  caFile: string;
  dataDir: string;
}

export interface Certificate {
  cert: string;
  key: string;
  notBefore: Date;
  notAfter: Date;
}

/** Renew when less than a third of the lifetime, or 30 days, is left, whichever comes first. */
export function needsRenewal(cert: Pick<Certificate, 'notBefore' | 'notAfter'>, now: Date): boolean {
  const lifetime = cert.notAfter.getTime() - cert.notBefore.getTime();
  const left = cert.notAfter.getTime() - now.getTime();
  return left < Math.min(30 * DAY_MS, lifetime / 3);
}

/** The tokens the HTTP port answers under /.well-known/acme-challenge/ while an order is open. */
export type ChallengeResponses = Map<string, string>;

const DOMAIN = /^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z0-9-]{2,63}$/;

export class CertificateManager {
  private readonly dir: string;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<Certificate> | null = null;

  constructor(
    private readonly settings: AcmeSettings,
    readonly challenges: ChallengeResponses,
    private readonly logger: Logger,
  ) {
    if (!DOMAIN.test(settings.domain)) throw new ConfigError(`--acme ${JSON.stringify(settings.domain)} is not a DNS name`);
    this.dir = join(settings.dataDir, 'scripts', 'acme');
  }

  private path(name: string): string {
    return join(this.dir, name);
  }

  /** The stored certificate for the domain, or null when there is none yet. */
  async stored(): Promise<Certificate | null> {
    try {
      const [cert, key] = await Promise.all([
        readFile(this.path(`${this.settings.domain}.crt`), 'utf8'),
        readFile(this.path(`${this.settings.domain}.key`), 'utf8'),
      ]);
      return withDates(cert, key);
    } catch {
      return null;
    }
  }

  /** A certificate fit to serve now: the stored one while fresh, else a new one from the ACME server. */
  async current(): Promise<Certificate> {
    const stored = await this.stored();
    if (stored && !needsRenewal(stored, new Date())) return stored;
    try {
      return await this.renew();
    } catch (err) {
      if (stored && stored.notAfter > new Date()) {
        this.logger.error({ err: (err as Error).message }, 'ACME renewal failed; serving the stored certificate until it works');
        return stored;
      }
      throw new StartupError(`scripts: no certificate for ${this.settings.domain} from ${this.settings.directoryUrl}: ${(err as Error).message}`);
    }
  }

  /** Orders a new certificate now (one order at a time) and stores it. */
  renew(): Promise<Certificate> {
    this.renewing ??= this.order().finally(() => {
      this.renewing = null;
    });
    return this.renewing;
  }

  /** Checks twice a day and hands a renewed certificate to `install`. */
  scheduleRenewal(install: (cert: Certificate) => void): void {
    this.timer = setInterval(() => {
      void this.stored().then(async (stored) => {
        if (stored && !needsRenewal(stored, new Date())) return;
        try {
          install(await this.renew());
        } catch (err) {
          this.logger.error({ err: (err as Error).message }, 'ACME renewal failed; will try again');
        }
      });
    }, RENEWAL_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Accounts belong to one ACME server: one folder per directory URL. */
  private accountPath(name: string): string {
    const server = createHash('sha256').update(this.settings.directoryUrl).digest('hex').slice(0, 16);
    return join(this.dir, 'accounts', server, name);
  }

  private async accountKey(): Promise<Buffer> {
    const path = this.accountPath('account.key');
    try {
      return await readFile(path);
    } catch {
      const key = await acme.crypto.createPrivateEcdsaKey();
      await writeFileAtomic(path, key, 0o600);
      return key;
    }
  }

  private async order(): Promise<Certificate> {
    const { domain, directoryUrl, email, caFile } = this.settings;
    if (caFile) {
      // acme-client talks through one axios instance per process; a private CA is trusted there.
      acme.axios.defaults.httpsAgent = new Agent({ ca: await readFile(caFile, 'utf8') });
    }
    // With its URL known the account is not registered again (pebble refuses that re-registration's update).
    const accountUrl = await readFile(this.accountPath('account.url'), 'utf8').catch(() => '');
    const client = new acme.Client({ directoryUrl, accountKey: await this.accountKey(), ...(accountUrl ? { accountUrl } : {}) });
    const [key, csr] = await acme.crypto.createCsr({ commonName: domain, altNames: [domain] }, await acme.crypto.createPrivateEcdsaKey());
    this.logger.info({ domain, directoryUrl }, 'ordering a certificate by ACME (http-01)');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the order did not finish within ${ORDER_TIMEOUT_MS / 1000} s`)), ORDER_TIMEOUT_MS);
    });
    const chain = await Promise.race([
      client.auto({
        csr,
        ...(email ? { email } : {}),
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // Our own HTTP port answers the challenge; a self-check through public DNS adds nothing here.
        skipChallengeVerification: true,
        challengeCreateFn: async (_authz, challenge, keyAuthorization) => {
          this.challenges.set(challenge.token, keyAuthorization);
        },
        challengeRemoveFn: async (_authz, challenge) => {
          this.challenges.delete(challenge.token);
        },
      }),
      timeout,
    ]).finally(() => clearTimeout(timer));
    if (!accountUrl) await writeFileAtomic(this.accountPath('account.url'), client.getAccountUrl(), 0o600);
    await writeFileAtomic(this.path(`${domain}.key`), key, 0o600);
    await writeFileAtomic(this.path(`${domain}.crt`), chain, 0o644);
    const cert = withDates(chain, key.toString());
    this.logger.info({ domain, notAfter: cert.notAfter.toISOString() }, 'certificate obtained');
    return cert;
  }
}

function withDates(cert: string, key: string): Certificate {
  const leaf = new X509Certificate(cert);
  return { cert, key, notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
}
