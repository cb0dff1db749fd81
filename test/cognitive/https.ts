/** Runs https-client.ts in its own process trusting the container's CA, as a user's program would run. */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const CLIENT = fileURLToPath(new URL('./https-client.ts', import.meta.url));

export async function runHttpsClient(kind: 'language' | 'face', endpoint: string, caCertPath: string, imageFile?: string): Promise<Record<string, unknown>> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', CLIENT, kind, endpoint, ...(imageFile ? [imageFile] : [])], {
    env: { ...process.env, NODE_EXTRA_CA_CERTS: caCertPath },
    timeout: 120_000,
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
}
