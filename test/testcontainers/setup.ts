/**
 * Run by `npm test` before this folder's suite: the module starts the image
 * the container suites build, so their set-up (base image, offcloud image)
 * comes first, once, outside the runner's per-file timeout.
 */
import '../containers/setup.ts';
