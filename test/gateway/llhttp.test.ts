/**
 * The gateway's parser is llhttp from undici's internal files
 * (src/gateway/http/llhttp.ts). Those paths are not undici's public
 * interface: this suite fails on any undici other than the one they were
 * checked against, so an upgrade is a conscious step, not a surprise in
 * production.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import test from 'node:test';
import { instantiateLlhttp, LLHTTP_SOURCE, type LlhttpCallbacks } from '../../src/gateway/http/llhttp.ts';

const require = createRequire(import.meta.url);

/** Every export the gateway calls (the Llhttp interface). */
const USED_EXPORTS = [
  'memory',
  '_initialize',
  'malloc',
  'free',
  'llhttp_alloc',
  'llhttp_free',
  'llhttp_execute',
  'llhttp_finish',
  'llhttp_resume_after_upgrade',
  'llhttp_get_error_pos',
  'llhttp_get_error_reason',
  'llhttp_get_http_major',
  'llhttp_get_http_minor',
  'llhttp_get_method',
  'llhttp_method_name',
  'llhttp_errno_name',
];

const noCallbacks: LlhttpCallbacks = {
  wasm_on_message_begin: () => 0,
  wasm_on_url: () => 0,
  wasm_on_status: () => 0,
  wasm_on_header_field: () => 0,
  wasm_on_header_value: () => 0,
  wasm_on_headers_complete: () => 0,
  wasm_on_body: () => 0,
  wasm_on_message_complete: () => 0,
};

test('the installed undici is the one whose llhttp files were checked', () => {
  const installed = (require('undici/package.json') as { version: string }).version;
  assert.equal(
    installed,
    LLHTTP_SOURCE.undiciVersion,
    `undici ${installed} is installed but src/gateway/http/llhttp.ts was checked against ${LLHTTP_SOURCE.undiciVersion}: ` +
      `check that ${LLHTTP_SOURCE.simd} and ${LLHTTP_SOURCE.plain} still hold llhttp with the exports this suite lists, run test/gateway, then update the pin`,
  );
});

test('package.json pins undici to exactly that version, so no install can bring another', () => {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> };
  assert.equal(manifest.dependencies['undici'], LLHTTP_SOURCE.undiciVersion, 'an exact version, no range (docs/decisions/007-private-internals.md)');
});

test('both builds undici ships are WebAssembly modules with the C interface the parser calls', () => {
  for (const path of [LLHTTP_SOURCE.simd, LLHTTP_SOURCE.plain]) {
    const module = new WebAssembly.Module(require(path) as Buffer<ArrayBuffer>);
    const exported = WebAssembly.Module.exports(module).map((e) => e.name);
    for (const name of USED_EXPORTS) assert.ok(exported.includes(name), `${path} does not export ${name}`);
    const imported = WebAssembly.Module.imports(module)
      .map((i) => i.name)
      .sort();
    assert.deepEqual(imported, Object.keys(noCallbacks).sort(), `${path} imports other callbacks than the parser gives`);
  }
});

test('an instance parses a request with the callbacks it was given', () => {
  let url = '';
  const llhttp = instantiateLlhttp({
    ...noCallbacks,
    wasm_on_url: (_p, at, length) => ((url = Buffer.from(llhttp.memory.buffer, at, length).toString('latin1')), 0),
  });
  const parser = llhttp.llhttp_alloc(1);
  const request = Buffer.from('GET /users?x=1 HTTP/1.1\r\nHost: a\r\n\r\n');
  const at = llhttp.malloc(request.length);
  new Uint8Array(llhttp.memory.buffer, at, request.length).set(request);
  assert.equal(llhttp.llhttp_execute(parser, at, request.length), 0);
  assert.equal(url, '/users?x=1');
  assert.equal(llhttp.llhttp_get_http_minor(parser), 1);
  llhttp.free(at);
  llhttp.llhttp_free(parser);
});
