/**
 * `npm run bench -- <component>`: runs bench/<component>/index.ts, which starts
 * our server and its baseline side by side in one run, and prints one line with
 * the ratio plus the JSON result.
 */
import { existsSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { BenchResult } from './common/result.ts';

const name = process.argv[2];
const file = name ? new URL(`./${name}/index.ts`, import.meta.url) : undefined;
if (!name || !file || !existsSync(file)) {
  console.error('usage: npm run bench -- <component>   (a folder under bench/)');
  process.exit(2);
}
const bench = (await import(pathToFileURL(file.pathname).href)) as { run(): Promise<BenchResult[]> };
for (const result of await bench.run()) {
  console.log(
    `${result.name}: ours ${result.ours.toFixed(1)} ${result.unit}, baseline (${result.baseline}) ${result.baselineValue.toFixed(1)} ${result.unit}, ratio ${result.ratio.toFixed(2)} (${result.better} is better)`,
  );
  console.log(JSON.stringify(result));
}
