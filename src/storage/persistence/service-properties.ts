/**
 * An account's Blob service properties (Set/Get Blob Service Properties), kept in
 * <account root>/service-properties.json, written atomically and flushed before the Set
 * is acknowledged. Each top-level element (Logging, HourMetrics, MinuteMetrics, Cors,
 * DefaultServiceVersion, DeleteRetentionPolicy, StaticWebsite) is kept as it was set; a
 * Set that leaves one out keeps the one before, as the service does.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { syncDirectory, writeFileAtomic } from '../../common/files.ts';

export interface CorsRule {
  allowedOrigins: string[];
  allowedMethods: string[];
  allowedHeaders: string[];
  exposedHeaders: string[];
  maxAgeInSeconds: number;
}

/** The elements of <StorageServiceProperties>, as parsed XML, and the CORS rules read from them. */
export interface ServiceProperties {
  elements: Record<string, unknown>;
  cors: CorsRule[];
}

const retention = { Enabled: false };
/** What a new account answers: everything off, no CORS rules. */
export const DEFAULT_SERVICE_ELEMENTS: Record<string, unknown> = {
  Logging: { Version: '1.0', Read: false, Write: false, Delete: false, RetentionPolicy: retention },
  HourMetrics: { Version: '1.0', Enabled: false, RetentionPolicy: retention },
  MinuteMetrics: { Version: '1.0', Enabled: false, RetentionPolicy: retention },
  Cors: '',
  DeleteRetentionPolicy: { Enabled: false },
  StaticWebsite: { Enabled: false },
};

export class ServicePropertiesStore {
  private constructor(
    private readonly path: string,
    private value: ServiceProperties,
  ) {}

  static async open(root: string, readCors: (elements: Record<string, unknown>) => CorsRule[]): Promise<ServicePropertiesStore> {
    const path = join(root, 'service-properties.json');
    let elements = DEFAULT_SERVICE_ELEMENTS;
    try {
      elements = { ...elements, ...(JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>) };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    return new ServicePropertiesStore(path, { elements, cors: readCors(elements) });
  }

  get current(): ServiceProperties {
    return this.value;
  }

  /** Replaces the elements given; resolves once the new properties are on disk. */
  async set(given: Record<string, unknown>, cors: CorsRule[] | undefined): Promise<void> {
    const elements = { ...this.value.elements, ...given };
    await writeFileAtomic(this.path, JSON.stringify(elements));
    await syncDirectory(join(this.path, '..'));
    this.value = { elements, cors: cors ?? this.value.cors };
  }
}
