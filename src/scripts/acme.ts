/**
 * Certificates by ACME with HTTP-01 verification (§5, §8): the account key,
 * the certificate key and the issued chain live in the AcmeStore; a stored certificate is reused while it is fresh and renewed before it
 * expires, without a restart (the HTTPS server swaps its secure context).
 */
import { X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { Agent } from 'node:https';
import acme from 'acme-client';
import type { Logger } from 'pino';
import { ConfigError, StartupError } from '../common/errors.ts';
import { AcmeStore } from './store.ts';

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
  private readonly store: AcmeStore;
  private timer: NodeJS.Timeout | undefined;
  private renewing: Promise<Certificate> | null = null;

  constructor(
    private readonly settings: AcmeSettings,
    readonly challenges: ChallengeResponses,
    private readonly logger: Logger,
  ) {
    if (!DOMAIN.test(settings.domain)) throw new ConfigError(`--acme ${JSON.stringify(settings.domain)} is not a DNS name`);
    this.store = new AcmeStore(settings.dataDir);
  }

  /** The stored certificate for the domain, or null when there is none yet. */
  async stored(): Promise<Certificate | null> {
    const stored = await this.store.certificate(this.settings.domain);
    return stored && withDates(stored.cert, stored.key);
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

  private async order(): Promise<Certificate> {
    const { domain, directoryUrl, email, caFile } = this.settings;
    if (caFile) {
      // acme-client talks through one axios instance per process; a private CA is trusted there.
      acme.axios.defaults.httpsAgent = new Agent({ ca: await readFile(caFile, 'utf8') });
    }
    // With its URL known the account is not registered again (pebble refuses that re-registration's update).
    const accountUrl = await this.store.accountUrl(directoryUrl);
    const accountKey = await this.store.accountKey(directoryUrl, () => acme.crypto.createPrivateEcdsaKey());
    const client = new acme.Client({ directoryUrl, accountKey, ...(accountUrl ? { accountUrl } : {}) });
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
    if (!accountUrl) await this.store.saveAccountUrl(directoryUrl, client.getAccountUrl());
    await this.store.saveCertificate(domain, chain, key);
    const cert = withDates(chain, key.toString());
    this.logger.info({ domain, notAfter: cert.notAfter.toISOString() }, 'certificate obtained');
    return cert;
  }
}

function withDates(cert: string, key: string): Certificate {
  const leaf = new X509Certificate(cert);
  return { cert, key, notBefore: new Date(leaf.validFrom), notAfter: new Date(leaf.validTo) };
}
