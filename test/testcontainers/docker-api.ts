/**
 * A Docker-compatible API socket for the Testcontainers suites: podman's API
 * service (`podman system service`), as the module's README tells a podman user
 * to start it. podman.ts has pointed CONTAINERS_CONF at the settings this
 * machine needs; the service inherits them.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { removeContainer } from '../containers/podman.ts';

export interface DockerApi {
  /** `unix://…`, for DOCKER_HOST. */
  dockerHost: string;
  stop(): void;
}

/** Starts the service on a socket in `dir`; resolves once it answers `GET /_ping`. */
export async function startDockerApi(dir: string): Promise<DockerApi> {
  const socketPath = join(dir, 'podman.sock');
  const service = spawn('podman', ['system', 'service', '--time=0', `unix://${socketPath}`], { stdio: 'ignore' });
  const stop = () => void service.kill();
  for (let i = 0; i < 240 && service.exitCode == null; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = httpRequest({ socketPath, path: '/_ping' }, (res) => (res.resume(), resolve(res.statusCode === 200)));
      req.on('error', () => resolve(false));
      req.end();
    });
    if (ok) return { dockerHost: `unix://${socketPath}`, stop };
    await sleep(250);
  }
  stop();
  throw new Error(`podman system service did not answer on ${socketPath}`);
}

/**
 * The clean-up of a file that started one named container through the API: stop it, remove it by
 * name (start() may have failed half-way; no Ryuk here), stop the API and remove the work folder.
 */
export async function cleanUpNamed(
  name: string,
  container: { stop(): Promise<unknown> } | undefined,
  api: DockerApi | undefined,
  work: string | undefined,
): Promise<void> {
  await container?.stop();
  await removeContainer(name);
  api?.stop();
  if (work) await rm(work, { recursive: true, force: true });
}
