/**
 * The command that prints `offcloud env`'s shell variables, for the closing
 * line of `offcloud up`'s table. In the offcloud image (its Containerfile sets
 * OFFCLOUD_IN_CONTAINER=1) there is no npx and the user is on the host: they
 * run `offcloud env` through the engine's `exec`, naming the container by its
 * host name (its short id, or the name given with `--hostname`). The engines
 * mark their containers with a file: podman /run/.containerenv, docker /.dockerenv.
 */
import { existsSync } from 'node:fs';
import { hostname } from 'node:os';

export type ContainerEngine = 'podman' | 'docker';

/** The engine whose offcloud image this process runs in, or null outside one. */
export function imageEngine(env: NodeJS.ProcessEnv = process.env, exists: (path: string) => boolean = existsSync): ContainerEngine | null {
  if (env.OFFCLOUD_IN_CONTAINER !== '1') return null;
  return exists('/run/.containerenv') ? 'podman' : 'docker';
}

/** The closing line of `offcloud up`'s table: how to get every value as shell variables. */
export function envHint(engine: ContainerEngine | null = imageEngine(), name = hostname()): string {
  const command = engine ? `${engine} exec ${name} offcloud env` : 'eval "$(npx offcloud env)"';
  return `Every value above as shell variables: ${command}`;
}
