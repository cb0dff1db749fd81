import assert from 'node:assert/strict';
import { rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { request } from 'undici';
import { startScripts } from '../../src/scripts/server.ts';
import { quiet, tempDataDir } from '../helpers/index.ts';
import { callStream, dataLines, exitOf, startHarness } from './helpers.ts';

const h = await startHarness({ after });
await h.script('top.sh', '#!/bin/sh\necho "top level"\n');
await h.script('reports/daily.sh', '#!/bin/sh\necho "daily report"\n');
await h.script('resources/create.sh', '#!/bin/sh\n# offcloud: methods=POST\necho "creating $PARAM_NAME"\necho "body: $(cat)"\necho "method $REQUEST_METHOD"\n');
await h.script('params.sh', '#!/bin/sh\nenv | grep -E "^PARAM_" | sort\n');
await h.script('env.sh', '#!/bin/sh\necho "secret=${OFFCLOUD_TEST_SECRET:-unset}"\necho "name=$SCRIPT_NAME"\n');

test('R-SCRIPT-1 scripts/<folder>/<name>.sh is served at /<folder>/<name>', async () => {
  const answer = await callStream(`${h.base}/reports/daily`);
  assert.equal(answer.status, 200);
  assert.deepEqual(dataLines(answer), ['daily report']);
  assert.equal(exitOf(answer).code, 0);
});

test('R-SCRIPT-2 scripts/<name>.sh is served at /<name>', async () => {
  const answer = await callStream(`${h.base}/top`);
  assert.deepEqual(dataLines(answer), ['top level']);
});

test('R-SCRIPT-3 POST runs the resource-creation script, with the body on stdin; GET is refused by its methods=POST', async () => {
  const answer = await callStream(`${h.base}/resources/create?name=disk1`, { method: 'POST', body: 'size=10', headers: { 'content-type': 'text/plain' } });
  assert.equal(answer.status, 200);
  assert.deepEqual(dataLines(answer), ['creating disk1', 'body: size=10', 'method POST']);
  const get = await request(`${h.base}/resources/create`);
  assert.equal(get.statusCode, 405);
  assert.equal(get.headers.allow, 'POST');
  assert.equal(((await get.body.json()) as { error: { code: string } }).error.code, 'MethodNotAllowed');
});

test('R-SCRIPT-3 a script without a settings line answers GET and POST, not PUT', async () => {
  assert.equal((await callStream(`${h.base}/top`, { method: 'POST' })).status, 200);
  const put = await request(`${h.base}/top`, { method: 'PUT' });
  assert.equal(put.statusCode, 405);
  assert.equal(put.headers.allow, 'GET, POST');
  await put.body.dump();
});

test('R-SCRIPT-4 each query parameter reaches the script as PARAM_<NAME>', async () => {
  const answer = await callStream(`${h.base}/params?name=Ada%20Lovelace&count=3&empty=&quote=%22%24(id)%22`);
  assert.deepEqual(dataLines(answer), ['PARAM_COUNT=3', 'PARAM_EMPTY=', 'PARAM_NAME=Ada Lovelace', 'PARAM_QUOTE="$(id)"']);
});

test('R-SCRIPT-4 form fields of a POST body are parameters too', async () => {
  const answer = await callStream(`${h.base}/params?a=1`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: 'b=two+words&c=%3B',
  });
  assert.deepEqual(dataLines(answer), ['PARAM_A=1', 'PARAM_B=two words', 'PARAM_C=;']);
});

test('R-SCRIPT-4 the server environment does not leak into scripts; CGI-style facts do', async () => {
  process.env.OFFCLOUD_TEST_SECRET = 'hunter2';
  try {
    const answer = await callStream(`${h.base}/env`);
    assert.deepEqual(dataLines(answer), ['secret=unset', 'name=/env']);
  } finally {
    delete process.env.OFFCLOUD_TEST_SECRET;
  }
});

test('R-SCRIPT-1 adding, changing and removing a script takes effect without a restart', async () => {
  assert.equal((await request(`${h.base}/later/new`)).statusCode, 404);
  await h.script('later/new.sh', '#!/bin/sh\necho one\n');
  assert.deepEqual(dataLines(await callStream(`${h.base}/later/new`)), ['one']);
  await h.script('later/new.sh', '#!/bin/sh\n# offcloud: methods=POST\necho two\n');
  assert.equal((await request(`${h.base}/later/new`)).statusCode, 405);
  assert.deepEqual(dataLines(await callStream(`${h.base}/later/new`, { method: 'POST' })), ['two']);
  await rm(join(h.folder, 'later/new.sh'));
  assert.equal((await request(`${h.base}/later/new`)).statusCode, 404);
});

test('R-SCRIPT-1 a script without the executable bit runs with the interpreter its shebang names', async () => {
  await h.script('plain.sh', '#!/bin/sh\necho "not executable"\n', 0o644);
  assert.deepEqual(dataLines(await callStream(`${h.base}/plain`)), ['not executable']);
});

test('R-SCRIPT-3 a script whose interpreter is missing answers 500 ScriptNotStarted, and the server keeps serving', async () => {
  await h.script('orphan.sh', '#!/nonexistent/interpreter\necho never\n');
  const answer = await request(`${h.base}/orphan`);
  assert.equal(answer.statusCode, 500);
  const body = (await answer.body.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'ScriptNotStarted');
  assert.match(body.error.message, /ENOENT/);
  assert.deepEqual(dataLines(await callStream(`${h.base}/top`)), ['top level']);
});

test('R-SCRIPT-1 the index lists every script with URL and methods (JSON and HTML)', async () => {
  const json = await request(`${h.base}/`, { headers: { accept: 'application/json' } });
  const listed = (await json.body.json()) as { scripts: { path: string; url: string; methods: string[] }[] };
  const create = listed.scripts.find((s) => s.path === '/resources/create');
  assert.deepEqual(create?.methods, ['POST']);
  assert.equal(create?.url, `${h.base}/resources/create`);
  assert.ok(listed.scripts.some((s) => s.path === '/reports/daily'));
  const html = await request(`${h.base}/`, { headers: { accept: 'text/html' } });
  assert.match(html.headers['content-type'] as string, /text\/html/);
  const page = await html.body.text();
  assert.match(page, /<button data-path="\/reports\/daily">run<\/button>/);
  assert.doesNotMatch(page, /data-path="\/resources\/create"/, 'a POST-only script gets no GET button');
});

test('R-SCRIPT-1 hidden files, other extensions and links out of the folder are not served or listed', async () => {
  await h.script('.hidden.sh', '#!/bin/sh\necho hidden\n');
  await h.script('notes.txt', 'not a script\n');
  await h.script('../escape-target.sh', '#!/bin/sh\necho escaped\n');
  await symlink(join(h.folder, '../escape-target.sh'), join(h.folder, 'escape.sh'));
  await h.script('../escape-dir/x.sh', '#!/bin/sh\necho escaped\n');
  await symlink(join(h.folder, '../escape-dir'), join(h.folder, 'outdir'));
  for (const path of ['/.hidden', '/notes', '/escape', '/outdir/x']) {
    const answer = await request(h.base + path);
    assert.equal(answer.statusCode, 404, path);
    assert.doesNotMatch(await answer.body.text(), /data: /);
  }
  const listed = (await (await request(`${h.base}/`, { headers: { accept: 'application/json' } })).body.json()) as { scripts: { path: string }[] };
  assert.ok(!listed.scripts.some((s) => ['/.hidden', '/escape', '/notes', '/outdir/x'].includes(s.path)));
  // A link that stays inside the folder is served: the check is about where a path leads.
  await symlink(join(h.folder, 'top.sh'), join(h.folder, 'alias.sh'));
  assert.deepEqual(dataLines(await callStream(`${h.base}/alias`)), ['top level']);
});

test('R-SCRIPT-1 a bad settings line is reported, not run', async () => {
  await h.script('broken.sh', '#!/bin/sh\n# offcloud: methods=FETCH\necho ran\n');
  const answer = await request(`${h.base}/broken`);
  assert.equal(answer.statusCode, 500);
  const body = (await answer.body.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'InvalidScriptSettings');
  assert.match(body.error.message, /methods=FETCH/);
});

test('R-SCRIPT-1 the default folder is <data-dir>/scripts, seeded with two examples that run', async (t) => {
  const dataDir = await tempDataDir(t);
  const server = await startScripts({ ...quiet, dataDir });
  t.after(() => server.close());
  const base = server.urls[0]!.url.replace(/\/$/, '');
  assert.deepEqual(dataLines(await callStream(`${base}/hello?name=you`))[0], 'hello you');
  const created = await callStream(`${base}/resources/create?name=x`, { method: 'POST', body: 'abc' });
  assert.deepEqual(dataLines(created), ['creating resource x', 'received 3 bytes', 'created resource x for anonymous']);
});

test('R-SCRIPT-1 a --scripts-dir that does not exist stops start-up with a message', async (t) => {
  const dataDir = await tempDataDir(t);
  await assert.rejects(startScripts({ ...quiet, dataDir, scriptsDir: join(dataDir, 'missing') }), /--scripts-dir .*missing is not a folder/);
});
