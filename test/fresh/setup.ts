/**
 * Run by `npm test` before the fresh-machine suite, outside the runner's
 * per-file limit: `npm pack` (its prepare compiles dist/) takes minutes on a
 * loaded machine.
 */
import { PACK_DIR, packInto } from './pack.ts';

const started = performance.now();
const tarball = await packInto(PACK_DIR);
console.log(`test: ${tarball} packed in ${((performance.now() - started) / 1000).toFixed(0)} s`);
