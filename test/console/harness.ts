/**
 * Real components on port 0 (started through their component definitions,
 * as `offcloud up` starts them), the console wired to them by its wireUp,
 * and one headless browser for the whole file: Debian's chromium through
 * playwright-core, or Debian's firefox-esr through puppeteer-core.
 */
import { portOptionKeys } from '../helpers/up.ts';
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent as HttpsAgent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BlobServiceClient, type StoragePipelineOptions } from '@azure/storage-blob';
import { chromium, type BrowserContext } from 'playwright-core';
import puppeteer, { type Browser as PuppeteerBrowser } from 'puppeteer-core';
import { ensureLocalCa } from '../../src/common/ca.ts';
import type { RunningComponent } from '../../src/common/component.ts';
import { resolveConfig } from '../../src/common/config.ts';
import { components } from '../../src/components.ts';
import { debianProgram, quiet, tempDataDir } from '../helpers/index.ts';
import { mergeFacts, type PublishedFacts } from '../../src/common/facts.ts';

/** Screenshots go here (CI keeps the folder as the run's artifacts). */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'console');

/**
 * Clean-ups run last-registered-first, in one `after`: pages and device
 * clients close before the browser, the browser before the console (whose
 * close waits for the browser's open event streams), the console before the
 * components it calls.
 */
export class Cleanup {
  private readonly steps: (() => unknown)[] = [];

  constructor(after: (fn: () => unknown) => void) {
    after(async () => {
      const failures: unknown[] = [];
      for (const step of this.steps.reverse())
        await Promise.resolve()
          .then(step)
          .catch((err: unknown) => failures.push(err));
      if (failures.length) throw failures[0];
    });
  }

  add(step: () => unknown): void {
    this.steps.push(step);
  }
}

export interface Stack {
  dataDir: string;
  caPath: string;
  /** The CA file's PEM, for the SDK clients. */
  ca: string;
  started: Map<string, RunningComponent>;
  console: RunningComponent;
  base: string;
}

/** Starts a component by name with the options `offcloud up` would give it, plus `own`. */
export async function startNamed(
  cleanup: Cleanup,
  name: string,
  started: Map<string, RunningComponent>,
  own: Record<string, unknown>,
): Promise<RunningComponent> {
  const definition = components.find((c) => c.name === name);
  if (!definition) throw new Error(`no component ${name}`);
  const quietOnes = Object.fromEntries(Object.entries(quiet).filter(([key]) => key in definition.options));
  // Every listener on a free port (storage's HTTPS, the hub's WebSockets, …): suites run side by side.
  const freePorts = Object.fromEntries(portOptionKeys(definition.options).map((key) => [key, 0]));
  const file = { ...definition.upDefaults, ...definition.wireUp?.(mergeFacts(started.values()), started), ...quietOnes, ...freePorts, ...own };
  const running = await definition.start(resolveConfig(name, definition.options, { file, env: {} }));
  started.set(name, running);
  cleanup.add(() => running.close());
  return running;
}

/** The served script the scripts checks run: three lines, a pause before each of the last two. */
export const HELLO_SCRIPT = '#!/bin/sh\necho "hello $PARAM_NAME"\nsleep 0.3\necho "second line"\nsleep 0.3\necho "third line"\n';

export async function startStack(cleanup: Cleanup, scripts: Record<string, string> = { 'hello.sh': HELLO_SCRIPT }): Promise<Stack> {
  const dataDir = await tempDataDir({ after: () => {} });
  const { caCertPath } = await ensureLocalCa(dataDir);
  const scriptsDir = join(dataDir, 'scripts');
  await mkdir(scriptsDir, { recursive: true });
  for (const [name, body] of Object.entries(scripts)) {
    await writeFile(join(scriptsDir, name), body);
    await chmod(join(scriptsDir, name), 0o755);
  }
  const started = new Map<string, RunningComponent>();
  const common = { dataDir };
  await startNamed(cleanup, 'calculator', started, common);
  await startNamed(cleanup, 'users', started, common);
  await startNamed(cleanup, 'gateway', started, { ...common, httpsPort: 0, adminPort: 0 });
  await startNamed(cleanup, 'identity', started, { ...common, imdsPort: 0 });
  await startNamed(cleanup, 'storage', started, common);
  await startNamed(cleanup, 'devsvc', started, { ...common, registry: 'static' });
  await startNamed(cleanup, 'devdata', started, common);
  await startNamed(cleanup, 'scripts', started, { ...common, scriptsDir });
  await startNamed(cleanup, 'hub', started, { ...common, restPort: 0 });
  await startNamed(cleanup, 'billing', started, common);
  // Usage goes to billing within a fifth of a second, so the models page can chart it.
  await startNamed(cleanup, 'sentiment', started, { ...common, meteringIntervalMs: 200 });
  await startNamed(cleanup, 'face', started, { ...common, workers: 1, meteringIntervalMs: 200 });
  await startNamed(cleanup, 'scoring', started, common);
  await startNamed(cleanup, 'scoring-frontend', started, common);
  const running = await startNamed(cleanup, 'console', started, common);
  const ca = await readFile(caCertPath, 'utf8');
  return { dataDir, caPath: caCertPath, ca, started, console: running, base: running.urls[0]!.url.replace(/\/$/, '') };
}

/** What the started components published. */
export function factsOf(stack: Stack): PublishedFacts {
  return mergeFacts(stack.started.values());
}

/** The storage SDK with the connection string storage published, trusting the stack's CA. */
export function blobService(stack: Stack): BlobServiceClient {
  const agent = new HttpsAgent({ ca: stack.ca });
  return BlobServiceClient.fromConnectionString(factsOf(stack).storage!.connectionString, { agent } as StoragePipelineOptions);
}

/** One headless chromium with a fresh profile (playwright passes it as --user-data-dir). */
/** Without the background-networking flags Chromium's own connections are refused here and slow it down. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchBrowser(cleanup: Cleanup): Promise<BrowserContext> {
  const profile = await mkdtemp(join(tmpdir(), 'offcloud-chromium-'));
  const browser = await chromium.launchPersistentContext(profile, {
    executablePath: debianProgram('chromium', '/usr/bin/chromium'),
    headless: true,
    viewport: { width: 1280, height: 800 },
    args: CHROMIUM_ARGS,
  });
  // A page that waits too long fails the test in 10 s, not playwright's 30.
  browser.setDefaultTimeout(10_000);
  cleanup.add(async () => {
    await browser.close();
    await rm(profile, { recursive: true, force: true });
  });
  return browser;
}

/** One headless Debian firefox-esr through puppeteer-core (WebDriver BiDi; puppeteer makes and removes its profile). */
export async function launchFirefox(cleanup: Cleanup): Promise<PuppeteerBrowser> {
  const browser = await puppeteer.launch({
    browser: 'firefox',
    executablePath: debianProgram('firefox-esr', '/usr/bin/firefox-esr'),
    headless: true,
    defaultViewport: { width: 1280, height: 800 },
  });
  cleanup.add(() => browser.close());
  return browser;
}

export async function screenshot(page: { screenshot(options: { path: string; fullPage: boolean }): Promise<unknown> }, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
