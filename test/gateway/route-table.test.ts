/** The compiled route lookup picks exactly what a scan of Kong's sorted route list picks, for any mix of routes and requests. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { seededRandom } from '../../src/common/random.ts';
import { matchCandidate, type MatchInput } from '../../src/gateway/proxy/router.ts';
import { loadDoc } from './helpers.ts';

const PATHS = ['/', '/a', '/a/b', '/ab', '/api', '/api/v1', '/api/v1/items', '/users', '/usersX', '/x/y/z'];
const REGEXES = ['~/api/v\\d+/items/\\d+$', '~/users/(?<id>[^/]+)$', '~/a/.*', '~/(?:x|y)/'];
const HOSTS = ['a.test', 'b.test', 'a.test:8000', '*.test', 'api.example.com'];
const METHODS = ['GET', 'POST', 'PUT'];

test('1000 random requests over 300 random routes: the route table and a scan of the sorted candidates agree', () => {
  const random = seededRandom(33);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const some = <T>(list: readonly T[], chance: number): T[] | undefined =>
    random() < chance ? [...new Set(Array.from({ length: 1 + Math.floor(random() * 2) }, () => pick(list)))] : undefined;
  const routes = Array.from({ length: 300 }, (_, i) => {
    const paths = random() < 0.15 ? [pick(REGEXES)] : some(PATHS, 0.9);
    const route: Record<string, unknown> = { name: `r${i}`, paths, hosts: some(HOSTS, 0.3), methods: some(METHODS, 0.3) };
    if (random() < 0.1) route.headers = { 'x-v': [pick(['1', '2'])] };
    if (random() < 0.1) route.regex_priority = Math.floor(random() * 3);
    if (!route.paths && !route.hosts && !route.methods && !route.headers) route.paths = ['/'];
    return route;
  });
  const { candidates, routes: table } = loadDoc({ _format_version: '3.0', services: [{ name: 's', host: 'h', routes }] });
  for (let i = 0; i < 1000; i++) {
    const input: MatchInput = {
      method: pick(METHODS),
      host: pick(['a.test', 'A.test:8000', 'b.test:80', 'c.test', 'api.example.com', 'other']),
      path: pick([...PATHS, '/api/v2/items/9', '/users/42', '/a/b/c', '/y/', '/nothing', '/api/v1/items/7']) + pick(['', '/', 'q']),
      headers: random() < 0.3 ? { 'x-v': pick(['1', '2']) } : {},
    };
    let expected: { name: string | null; matched: string } | undefined;
    for (const candidate of candidates) {
      const matched = matchCandidate(candidate, input);
      if (matched !== null) {
        expected = { name: candidate.route.name, matched };
        break;
      }
    }
    const got = table.match(input);
    assert.deepEqual(got && { name: got.candidate.route.name, matched: got.matched }, expected, JSON.stringify(input));
  }
});
