/** Every `_format_version` Kong 3.x reads, the meta keys it allows everywhere, and the one shape of refusals and warnings. */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { test } from 'node:test';
import { pino } from 'pino';
import { request } from 'undici';
import { ConfigError } from '../../src/common/errors.ts';
import { checkDeclarativeFile } from '../../src/gateway/config/parse-command.ts';
import { migrateRoutePath } from '../../src/gateway/config/format-version.ts';
import { startGateway } from '../../src/gateway/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { echoBackend, errorsOf, loadDoc } from './helpers.ts';

/** A logger whose lines are kept, to check what a load reported. */
function capturingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

test("Kong's path migration for 1.1/2.1 files: regex paths get '~', plain ones are normalized", () => {
  assert.equal(migrateRoutePath('/users'), '/users');
  assert.equal(migrateRoutePath('/v1/users/\\d+'), '~/v1/users/\\d+');
  assert.equal(migrateRoutePath('/orders/(?<id>[0-9]+)$'), '~/orders/(?<id>[0-9]+)$');
  assert.equal(migrateRoutePath('/a%7Eb//c'), '/a~b/c', 'unreserved escapes decoded, slashes merged');
  assert.equal(migrateRoutePath('/a%2fb'), '/a%2Fb', 'reserved escapes kept, upper-cased');
  assert.equal(migrateRoutePath('/x(%2e)*'), '~/x(\\.)*', 'in a regex, an escaped metacharacter is escaped');
  assert.equal(migrateRoutePath('/x+%2Fy'), '~/x+%2Fy');
});

for (const version of ['1.1', '2.1']) {
  test(`_format_version "${version}" loads; its regex paths route as regexes; the migration is reported once`, async (t) => {
    const backend = await echoBackend(t);
    const dataDir = await tempDataDir(t);
    const file = join(dataDir, 'kong.yml');
    await writeFile(
      file,
      `_format_version: "${version}"\nservices:\n- name: orders\n  url: ${backend.url}\n  routes:\n  - name: one\n    paths: ["/orders/\\\\d+$"]\n  - name: all\n    paths: ["/orders"]\n`,
    );
    const { logger, lines } = capturingLogger();
    const running = await startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, declarativeConfig: file, logger });
    t.after(() => running.close());
    const proxy = running.urls[0]!.url;
    const one = await request(`${proxy}/orders/42`);
    await one.body.dump();
    const list = await request(`${proxy}/orders/x`);
    await list.body.dump();
    assert.equal(one.statusCode, 200);
    assert.equal(list.statusCode, 200);
    // The regex route strips what it matched; the plain one strips its prefix.
    assert.deepEqual(
      backend.seen.map((s) => s.url),
      ['/', '/x'],
    );
    const reported = lines.filter((l) => l.msg.includes('route paths migrated'));
    assert.equal(reported.length, 1);
    assert.match(
      reported[0]!.msg,
      new RegExp(
        `kong\\.yml: _format_version: "${version}": route paths migrated to 3\\.0 as Kong does: services\\[0\\]\\.routes\\[0\\]\\.paths\\[0\\] '/orders/\\\\d\\+\\$' → '~/orders/\\\\d\\+\\$'$`,
      ),
    );
  });
}

test('a 3.0 file keeps its paths as written: no migration', () => {
  const { entities, warnings } = loadDoc({ _format_version: '3.0', services: [{ name: 's', host: 'h', routes: [{ paths: ['/a.b'] }] }] });
  assert.deepEqual(entities.routes[0]!.paths, ['/a.b']);
  assert.deepEqual(warnings, []);
});

test('_comment and _ignore are allowed on the document and on every entity, nested or not', () => {
  const { entities, warnings } = loadDoc({
    _format_version: '3.0',
    _comment: 'the whole file',
    _ignore: [{ anything: true }],
    _transform: true,
    _workspace: 'default',
    services: [
      {
        _comment: 'a service',
        name: 's',
        url: 'http://h',
        routes: [{ _comment: 'a route', _ignore: ['x'], paths: ['/'], plugins: [{ _comment: 'a plugin', name: 'key-auth' }] }],
        plugins: [{ name: 'rate-limiting', _ignore: [], config: { second: 1 } }],
      },
    ],
    consumers: [{ _comment: 'c', username: 'u', keyauth_credentials: [{ _comment: 'k', key: 'k1' }] }],
    upstreams: [{ _comment: 'u', name: 'up', targets: [{ _comment: 't', target: 'a:1' }] }],
    plugins: [{ _comment: 'global', name: 'rate-limiting', config: { minute: 5 } }],
  });
  assert.equal(entities.services.length, 1);
  assert.equal(entities.keyauth_credentials[0]!.key, 'k1');
  assert.ok(!('_comment' in entities.services[0]!), 'meta keys are dropped from the entities');
  assert.deepEqual(warnings, []);
  assert.deepEqual(errorsOf({ _format_version: '3.0', _comment: 1, services: [{ name: 's', host: 'h', _comment: ['x'], _ignore: 'x' }] }), [
    '_comment: expected a string',
    'services[0]._comment: expected a string',
    'services[0]._ignore: expected an array',
  ]);
});

test('an entity Kong has and this gateway lacks gets the same message at the top level and nested', () => {
  assert.deepEqual(errorsOf({ _format_version: '3.0', oauth2_credentials: [], consumers: [{ username: 'u', oauth2_credentials: [{ name: 'x' }] }] }), [
    "oauth2_credentials: not supported by offcloud's gateway (Kong entity 'oauth2_credentials')",
    "consumers[0].oauth2_credentials: not supported by offcloud's gateway (Kong entity 'oauth2_credentials')",
  ]);
});

test('fields accepted without effect are load warnings with their path, unless given as what the gateway does anyway; another _workspace is a warning too', () => {
  const { warnings } = loadDoc({
    _format_version: '3.0',
    _workspace: 'team-a',
    services: [{ name: 's', host: 'h', routes: [{ paths: ['/'], request_buffering: true, response_buffering: true }] }],
    plugins: [{ name: 'rate-limiting', config: { second: 1, sync_rate: 10 } }],
  });
  assert.deepEqual(
    warnings.map((w) => w.path),
    ['_workspace', 'services[0].routes[0].request_buffering', 'services[0].routes[0].response_buffering', 'plugins[0].config.sync_rate'],
  );
  assert.match(warnings[1]!.message, /^accepted without effect: /);
  // A dump spells out values the gateway behaves as (bodies streamed, counters synchronous): no warning for those.
  const spelledOut = loadDoc({
    _format_version: '3.0',
    services: [{ name: 's', host: 'h', routes: [{ paths: ['/'], request_buffering: false, response_buffering: false }] }],
    plugins: [{ name: 'rate-limiting', config: { second: 1, sync_rate: -1 } }],
  });
  assert.deepEqual(spelledOut.warnings, []);
});

test('every refusal names the file and the path: YAML syntax errors, bad fields, and `offcloud gateway parse` the same way', async (t) => {
  const dataDir = await tempDataDir(t);
  const broken = join(dataDir, 'broken.yml');
  await writeFile(broken, '_format_version: "3.0"\nservices:\n  - name: s\n   host: h\n');
  const bad = join(dataDir, 'bad.yml');
  await writeFile(bad, '_format_version: "3.0"\nservices:\n- name: s\n  host: h\n  routes:\n  - paths: ["/a"]\n    hots: ["x"]\n');
  for (const [file, line] of [
    [broken, /^\s+\(top level\): not valid YAML or JSON: .*line 4/m],
    [bad, /^\s+services\[0\]\.routes\[0\]\.hots: unknown field$/m],
  ] as const) {
    const expected = new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: invalid declarative configuration:\n`);
    await assert.rejects(startGateway({ ...quiet, httpsPort: 0, adminPort: 0, dataDir, declarativeConfig: file }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.message, expected);
      assert.match(err.message, line);
      return true;
    });
    const parsed = await checkDeclarativeFile(file);
    assert.equal(parsed.ok, false);
    assert.match(parsed.message, expected);
    assert.match(parsed.message, line);
  }
});
