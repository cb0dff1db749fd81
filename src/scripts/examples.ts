/**
 * The default scripts folder, <data-dir>/scripts, is made on first start with
 * two small examples so a fresh `offcloud scripts` has something to call.
 * A folder given with --scripts-dir is used as it is, never written to.
 */
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ConfigError } from '../common/errors.ts';
import { writeFileAtomic } from '../common/files.ts';

const EXAMPLES: Record<string, string> = {
  'hello.sh': `#!/bin/sh
# Example: curl -N 'http://127.0.0.1:8080/hello?name=you'
# Each query parameter arrives as PARAM_<NAME>; each output line streams back as "data: <line>".
# offcloud: methods=GET,POST timeout=10s
echo "hello \${PARAM_NAME:-world}"
date -u +"it is %H:%M:%S UTC"
`,
  'resources/create.sh': `#!/bin/sh
# The resource-creation script (spec 4.5): curl -N -X POST --data-binary @file 'http://127.0.0.1:8080/resources/create?name=x'
# The request body arrives on stdin.
# offcloud: methods=POST timeout=30s concurrency=4
name="\${PARAM_NAME:-unnamed}"
echo "creating resource \${name}"
echo "received $(wc -c | tr -d ' ') bytes"
echo "created resource \${name} for \${REMOTE_USER:-anonymous}"
`,
};

/** The folder to serve: the one given (must exist), or the default one, seeded when new. */
export async function scriptsFolder(given: string, dataDir: string): Promise<string> {
  const folder = given || join(dataDir, 'scripts');
  const info = await stat(folder).catch(() => null);
  if (info?.isDirectory()) return folder;
  if (info || given) throw new ConfigError(`--scripts-dir ${folder} is not a folder`);
  await mkdir(folder, { recursive: true });
  for (const [name, text] of Object.entries(EXAMPLES)) await writeFileAtomic(join(folder, name), text, 0o755);
  return folder;
}
