/**
 * Shared by the suites that run the offcloud image with `podman run`: each
 * file gets its own network and removes every container it started; a
 * container is started on free host ports and awaited on its /ready. (One file
 * per theme keeps each under the runner's per-file time limit on a small machine.)
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../helpers/index.ts';
import { BUILD_TIMEOUT, ensureImage, podman, podmanStatus, removeContainer, waitReady } from './podman.ts';

export interface Started {
  name: string;
  /** Host port of each published container port. */
  ports: Record<number, number>;
  /** Milliseconds from `podman run` to the first 2xx of /ready (when a ready URL was given). */
  readyMs?: number;
}

export interface RunOptions {
  publish?: number[];
  flags?: string[];
  args: string[];
  readyPath?: string;
}

export interface ContainerSuite {
  /** The image, once the suite's `before` has built (or found) it. */
  image(): string;
  /**
   * `podman run -d` on the suite's network, each container port published on a
   * free host port; waits for `readyPath` on the first published port.
   */
  run(role: string, options: RunOptions): Promise<Started>;
}

/** Registers the file's before/after hooks: the image, a network, and the removal of its containers. */
export function containerSuite(): ContainerSuite {
  const network = `offcloud-test-${process.pid}`;
  const containers: string[] = [];
  let image = '';
  before(async () => {
    const built = await ensureImage();
    image = built.image;
    console.log(`# image ${image}: ${(built.sizeBytes / 1e6).toFixed(0)} MB${built.built ? ' (built now)' : ''}`);
    await podman(['network', 'create', network]);
  }, BUILD_TIMEOUT);
  after(async () => {
    for (const name of containers) await removeContainer(name);
    await podman(['network', 'rm', '--force', network]).catch(() => undefined);
  });
  return {
    image: () => image,
    async run(role, options) {
      const name = `${network}-${role}`;
      containers.push(name);
      const ports: Record<number, number> = {};
      for (const port of options.publish ?? []) ports[port] = await freePort();
      const publish = Object.entries(ports).flatMap(([inside, outside]) => ['-p', `127.0.0.1:${outside}:${inside}`]);
      const start = performance.now();
      await podman(['run', '-d', '--name', name, '--network', network, ...publish, ...(options.flags ?? []), image, ...options.args]);
      if (!options.readyPath) return { name, ports };
      await waitReady(`http://127.0.0.1:${ports[options.publish![0]!]}${options.readyPath}`, name);
      const readyMs = performance.now() - start;
      console.log(`# ${role}: /ready ${(readyMs / 1000).toFixed(1)} s after podman run`);
      return { name, ports, readyMs };
    },
  };
}

/** podman stop (10 s grace, then SIGKILL = 137): a clean drain exits 0 well before that. */
export async function stopCleanly(name: string): Promise<void> {
  await podman(['stop', '--time', '10', name]);
  const code = (await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim();
  const logs = podmanStatus(['logs', '--tail', '20', name]);
  assert.equal(code, '0', `${name} exit code; logs:\n${logs.stdout}${logs.stderr}`);
}

/** A probe for `eventually` that asks podman at most twice a second. */
export function throttled<T>(probe: () => Promise<T | undefined>): () => Promise<T | undefined> {
  return async () => {
    await sleep(500);
    return probe();
  };
}
