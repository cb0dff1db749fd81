/**
 * What each console page must show with real data, and the few interactions
 * the browser suites share, written against the one thing playwright's and
 * puppeteer's pages have alike: `evaluate`, a function run in the page. The
 * Chromium suite (playwright) and the Firefox suite (puppeteer, WebDriver
 * BiDi) run the same checks through `driven(page)`.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Stack } from './harness.ts';

export interface Driven {
  goto(url: string): Promise<unknown>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  screenshot(options: { path: string; fullPage: boolean }): Promise<unknown>;
}

/** A playwright or puppeteer page as a Driven (their evaluate signatures differ only in typing). */
export function driven(page: {
  goto(url: string): Promise<unknown>;
  evaluate(fn: never, arg: never): Promise<unknown>;
  screenshot(options: { path: string; fullPage: boolean }): Promise<unknown>;
}): Driven {
  return {
    goto: (url) => page.goto(url),
    evaluate: <R, A>(fn: (arg: A) => R | Promise<R>, arg: A) => page.evaluate(fn as never, arg as never) as Promise<R>,
    screenshot: (options) => page.screenshot(options),
  };
}

const WAIT_MS = 10_000;

/** Resolves once `probe`, run in the page, answers true; fails naming `what` after 10 s. */
export async function until<A>(page: Driven, what: string, probe: (arg: A) => boolean, arg: A): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await page.evaluate(probe, arg))) {
    if (Date.now() > deadline) throw new Error(`the page never showed ${what}`);
    await sleep(50);
  }
}

/** An element matching `selector` whose text contains `text` (or matches it, given as a RegExp source). */
export function findText(page: Driven, selector: string, text: string | RegExp): Promise<void> {
  const pattern = typeof text === 'string' ? text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : text.source;
  return until(
    page,
    `${selector} with ${String(text)}`,
    ([sel, source]) => [...document.querySelectorAll(sel)].some((e) => new RegExp(source).test(e.textContent ?? '')),
    [selector, pattern] as const,
  );
}

/** The text of the first element matching `selector`. */
export function textOf(page: Driven, selector: string): Promise<string> {
  return page.evaluate((sel) => document.querySelector(sel)?.textContent ?? '', selector);
}

/** Clicks the first element matching `selector` whose text contains `text` (any, if none given), once it is there. */
export async function click(page: Driven, selector: string, text = ''): Promise<void> {
  await findText(page, selector, text);
  await page.evaluate(([sel, wanted]) => ([...document.querySelectorAll(sel)].find((e) => (e.textContent ?? '').includes(wanted)) as HTMLElement).click(), [
    selector,
    text,
  ] as const);
}

/** Types a value into a field as a user would end up with it: value set, input and change fired. */
export async function fill(page: Driven, selector: string, value: string): Promise<void> {
  await until(page, selector, (sel) => document.querySelector(sel) !== null, selector);
  await page.evaluate(
    ([sel, text]) => {
      const field = document.querySelector(sel) as HTMLInputElement | HTMLTextAreaElement;
      field.focus();
      field.value = text;
      field.dispatchEvent(new Event('input', { bubbles: true }));
      field.dispatchEvent(new Event('change', { bubbles: true }));
    },
    [selector, value] as const,
  );
}

/** Puts a file in a file input as choosing one does (a DataTransfer's FileList), then fires change. */
export async function chooseFile(page: Driven, selector: string, file: { name: string; type: string; content: Buffer }): Promise<void> {
  await until(page, selector, (sel) => document.querySelector(sel) !== null, selector);
  await page.evaluate(
    ([sel, name, type, base64]) => {
      const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
      const transfer = new DataTransfer();
      transfer.items.add(new File([bytes], name, { type }));
      const input = document.querySelector(sel) as HTMLInputElement;
      input.files = transfer.files;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    },
    [selector, file.name, file.type, file.content.toString('base64')] as const,
  );
}

/** The section (card) whose heading is exactly `title` holds an element matching `selector`. */
function inSection(page: Driven, title: string, selector: string): Promise<void> {
  return until(
    page,
    `${selector} in the ${title} section`,
    ([heading, sel]) => [...document.querySelectorAll('section')].some((s) => s.querySelector('h2')?.textContent === heading && s.querySelector(sel) !== null),
    [title, selector] as const,
  );
}

/**
 * Each page with the data the test stack starts with (the demo device, the
 * demo client, three gateway routes, the hello script, the demo devices):
 * what a user must see there. A page is opened at #/<name> first.
 */
export function pageChecks(stack: Stack): Record<string, (page: Driven) => Promise<void>> {
  return {
    async overview(page) {
      for (const name of ['hub', 'storage', 'identity', 'gateway', 'scripts', 'calculator', 'billing']) await inSection(page, name, '.probe-up');
      await findText(page, 'section', /SharedAccessKeyName=iothubowner/);
      await findText(page, '.snippet', 'DeviceId=demo-device');
    },
    async hub(page) {
      await findText(page, 'button', /^open demo-device$/);
      await until(page, 'the live telemetry', () => document.querySelector('ol.telemetry[data-following="true"]') !== null, null);
    },
    async storage(page) {
      await inSection(page, 'Containers', 'form[aria-label="create a container"]');
      await findText(page, 'ul.containers, p.muted', /\S/);
    },
    async identity(page) {
      await findText(page, 'table[aria-label="clients"]', stack.started.get('identity')!.facts!.identity!.demoClient!.clientId);
      await inSection(page, 'Token decoder', 'form[aria-label="decode a token"]');
    },
    async gateway(page) {
      await findText(page, 'h2', 'routes (3)');
      for (const name of ['users', 'calculator', 'calc-v1-add', 'demo', 'key-auth', 'rate-limiting']) await findText(page, 'main', name);
    },
    async scripts(page) {
      await findText(page, 'button', /^open \/hello$/);
    },
    async models(page) {
      for (const id of ['scoring-file', 'face-file'])
        await until(page, `the ${id} drop zone`, (drop) => document.querySelector(`[data-drop="${drop}"]`) !== null, id);
      await inSection(page, 'Billing usage per resource', 'figure.usage, p.muted');
    },
    async devices(page) {
      await findText(page, 'table[aria-label="devices"] td', /^sensor-2$/);
      await findText(page, 'table[aria-label="replicas"] .probe-up', 'SERVING');
    },
  };
}
