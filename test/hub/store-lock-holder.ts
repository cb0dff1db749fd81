/**
 * On the hub data dir argv[2], where device `held` exists: changes its tags
 * through the FileStore, then makes its file newer than what the store last
 * wrote, so the next change is made under the file's lock (the fallback of
 * FileStore.updateIdentity). Inside that lock it prints "locked" and blocks —
 * no timer runs, so the lock is not refreshed — until a line comes on stdin,
 * then hands the write to the store's worker and prints "written", or
 * "refused in one line: <message>" for an error the CLI prints in one line.
 */
import { readFileSync, readSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { OffcloudError } from '../../src/common/errors.ts';
import { writeFileAtomic } from '../../src/common/files.ts';
import { FileStore } from '../../src/hub/persistence/file-store.ts';

const dataDir = process.argv[2]!;
const path = join(dataDir, 'hub', 'identities', `${createHash('sha256').update('held').digest('hex')}.json`);
const store = new FileStore(dataDir);
try {
  await store.updateIdentity('held', (record) => ({ ...record, twin: { ...record.twin, tags: { by: 'holder', step: 1 } } }));
  await writeFileAtomic(path, readFileSync(path));
  let calls = 0;
  await store.updateIdentity('held', (record) => {
    // The first call makes the write that finds the file changed; the second is made holding the lock.
    if (++calls === 2) {
      console.log('locked');
      readSync(0, Buffer.alloc(1));
    }
    return { ...record, twin: { ...record.twin, tags: { by: 'holder', step: 2 } } };
  });
  console.log('written');
} catch (err) {
  console.log(`refused ${err instanceof OffcloudError ? 'in one line' : 'with a stack'}: ${(err as Error).message}`);
} finally {
  await store.close();
}
