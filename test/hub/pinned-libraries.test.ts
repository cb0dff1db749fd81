/**
 * The MQTT endpoint reaches into private fields of aedes' client and of the
 * mqtt-packet parser aedes makes for it (src/hub/mqtt/limits.ts, publish.ts).
 * A `^` range would let a user's install pull a release whose private fields
 * differ from the ones test/hub was run against, so both are pinned to the
 * exact release installed here, and aedes must load that same mqtt-packet.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };

/** The version of the package a module path belongs to (aedes does not export its package.json). */
function versionAt(modulePath: string, name: string): string {
  let dir = dirname(modulePath);
  while (!dir.endsWith(join('node_modules', name))) dir = dirname(dir);
  return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { version: string }).version;
}

test('aedes and mqtt-packet, whose private fields the MQTT endpoint uses, are pinned to the exact releases installed and tested', () => {
  const aedesPath = require.resolve('aedes');
  const installed = {
    aedes: versionAt(aedesPath, 'aedes'),
    // The parser aedes itself loads, not only the one this package resolves.
    'mqtt-packet': versionAt(createRequire(aedesPath).resolve('mqtt-packet'), 'mqtt-packet'),
  };
  for (const [name, version] of Object.entries(installed)) {
    assert.equal(
      manifest.dependencies[name],
      version,
      `package.json must pin ${name} to ${version}, the release installed: on an upgrade, run test/hub (limits and the direct PUBLISH path fail if the fields moved), then pin the new release`,
    );
  }
  assert.equal(versionAt(require.resolve('mqtt-packet'), 'mqtt-packet'), installed['mqtt-packet'], 'the hub and aedes load one mqtt-packet');
});
