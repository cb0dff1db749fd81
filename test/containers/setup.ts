/**
 * Run by `npm test` before the container suites, outside the runner's
 * per-file timeout: on a clean machine the base image, the offcloud image,
 * the Redis and etcd stand-ins and `npm run setup` on a minimal Debian take
 * minutes. Later runs find them built.
 */
import { ensureImage, ensureSetupImage, ensureStandIns } from './podman.ts';

const started = performance.now();
const { image, sizeBytes, built } = await ensureImage();
await ensureStandIns();
await ensureSetupImage();
console.log(
  `test: ${image} ${(sizeBytes / 1e6).toFixed(0)} MB (${built ? 'built' : 'reused'}); images ready in ${((performance.now() - started) / 1000).toFixed(0)} s`,
);
