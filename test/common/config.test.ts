import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { commonOptions, portOption, readConfigFile, resolveConfig } from '../../src/common/config.ts';
import { ConfigError } from '../../src/common/errors.ts';
import { tempDataDir } from '../helpers/index.ts';

const schema = {
  ...commonOptions,
  port: portOption(8082),
  mode: { type: 'string', default: 'fast', choices: ['fast', 'safe'], description: 'mode' },
  verbose: { type: 'boolean', default: false, description: 'verbose' },
  peers: { type: 'list', default: [] as string[], description: 'peers' },
} as const;

test('config precedence: flags > environment > file > defaults', () => {
  const env = { OFFCLOUD_CALCULATOR_PORT: '9002', OFFCLOUD_CALCULATOR_MODE: 'safe' };
  const file = { port: 9003, mode: 'fast', verbose: true };
  assert.equal(resolveConfig('calculator', schema, {}).port, 8082);
  assert.equal(resolveConfig('calculator', schema, { file }).port, 9003);
  assert.equal(resolveConfig('calculator', schema, { file, env }).port, 9002);
  assert.equal(resolveConfig('calculator', schema, { file, env, flags: { port: '9001' } }).port, 9001);
  const all = resolveConfig('calculator', schema, { file, env, flags: { port: '9001' } });
  assert.equal(all.mode, 'safe', 'env beats file');
  assert.equal(all.verbose, true, 'file beats default');
  assert.deepEqual(resolveConfig('calculator', schema, { flags: { peers: 'a, b,c' } }).peers, ['a', 'b', 'c']);
});

test('config: common options also read OFFCLOUD_<KEY>, the component variable wins', () => {
  assert.equal(resolveConfig('calculator', schema, { env: { OFFCLOUD_DATA_DIR: '/x' } }).dataDir, '/x');
  assert.equal(resolveConfig('calculator', schema, { env: { OFFCLOUD_DATA_DIR: '/x', OFFCLOUD_CALCULATOR_DATA_DIR: '/y' } }).dataDir, '/y');
});

test('config: a bad value stops start-up with one line naming the key and what is allowed', () => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ port: 'abc' }, /--port \(OFFCLOUD_CALCULATOR_PORT\): expected an integer from 0 to 65535/],
    [{ port: '70000' }, /--port .*0 to 65535/],
    [{ port: '1.5' }, /--port/],
    [{ mode: 'turbo' }, /--mode \(OFFCLOUD_CALCULATOR_MODE\): expected one of fast, safe/],
    [{ verbose: 'maybe' }, /--verbose .*true or false/],
  ];
  for (const [flags, message] of cases) {
    assert.throws(
      () => resolveConfig('calculator', schema, { flags }),
      (err: unknown) => {
        assert.ok(err instanceof ConfigError);
        assert.match(err.message, message);
        assert.ok(!err.message.includes('\n'), 'one line');
        return true;
      },
    );
  }
  assert.throws(() => resolveConfig('calculator', schema, { env: { OFFCLOUD_CALCULATOR_PORT: '-1' } }), /OFFCLOUD_CALCULATOR_PORT/);
  assert.throws(() => resolveConfig('calculator', schema, { file: { prot: 1 } }), /unknown key "prot"/);
});

test('config file: YAML and JSON sections; broken files give a clear error', async (t) => {
  const dir = await tempDataDir(t);
  const yamlPath = join(dir, 'offcloud.yaml');
  await writeFile(yamlPath, 'calculator:\n  port: 9100\n');
  assert.equal(resolveConfig('calculator', schema, { file: readConfigFile(yamlPath).calculator }).port, 9100);
  const jsonPath = join(dir, 'offcloud.json');
  await writeFile(jsonPath, '{"calculator": {"port": "x"}}');
  assert.throws(() => resolveConfig('calculator', schema, { file: readConfigFile(jsonPath).calculator }), /--port/);
  await writeFile(jsonPath, '{"calculator": ');
  assert.throws(() => readConfigFile(jsonPath), /not valid JSON/);
  await writeFile(yamlPath, '- a\n- b\n');
  assert.throws(() => readConfigFile(yamlPath), /object of component sections/);
  assert.throws(() => readConfigFile(join(dir, 'missing.yaml')), /cannot read config file/);
});
