/** Starts the real billing endpoint, a sentiment resource and the sentiment container, all on port 0. */
import type { TestContext } from 'node:test';
import { request } from 'undici';
import { startBilling } from '../../src/billing/server.ts';
import { BillingStore } from '../../src/billing/store.ts';
import { startSentiment, type SentimentOptions } from '../../src/sentiment/server.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';

export interface Setup {
  dataDir: string;
  billing: RunningComponent;
  billingUrl: string;
  apiKey: string;
  container: RunningComponent;
  /** Base URL of the container, e.g. http://127.0.0.1:40123. */
  base: string;
  /** Restarts billing on the same port and data dir (after a test stopped it). */
  restartBilling(): Promise<void>;
}

export async function startSetup(
  t: TestContext,
  overrides: Partial<SentimentOptions> = {},
  resource: { quota?: number; kind?: 'sentiment' | 'face' } = {},
): Promise<Setup> {
  const dataDir = await tempDataDir(t);
  const store = await BillingStore.open(dataDir);
  const { key } = await store.createResource({ kind: resource.kind ?? 'sentiment', quota: resource.quota ?? null });
  const setup = { dataDir, apiKey: key } as Setup;
  setup.billing = await startBilling({ ...quiet, dataDir });
  setup.billingUrl = setup.billing.facts!.billing!.billingUrl;
  setup.restartBilling = async () => {
    setup.billing = await startBilling({ ...quiet, dataDir, port: Number(new URL(setup.billingUrl).port) });
  };
  setup.container = await startSentiment({ ...quiet, eula: 'accept', billing: setup.billingUrl, apiKey: key, env: {}, ...overrides });
  setup.base = new URL(setup.container.urls[0]!.url).origin;
  t.after(async () => {
    await setup.container.close();
    await setup.billing.close();
  });
  return setup;
}

export const SENTIMENT_V20 = '/text/analytics/v2.0/sentiment';

export interface Status {
  apiStatus: string;
  apiStatusMessage: string;
}

export async function status(base: string): Promise<Status> {
  return (await (await request(`${base}/status`)).body.json()) as Status;
}

/** Waits (bounded) until the container's /status satisfies a condition; reports come every 100 ms here. */
export async function statusBecomes(base: string, wanted: (s: Status) => boolean): Promise<Status> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const current = await status(base);
    if (wanted(current)) return current;
    if (Date.now() > deadline) throw new Error(`status stayed ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
