// The calculator and a bare node:http server answering the same route the same way.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startCalculator } from '../../src/calculator/server.ts';
import { announce } from '../common/child.ts';

const ours = await startCalculator({ port: 0, logLevel: 'silent' });
const baseline = createServer((req, res) => {
  const match = /^\/add\/([+-]?\d+)\/([+-]?\d+)$/.exec(req.url ?? '');
  if (!match) {
    res.writeHead(400).end();
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end((BigInt(match[1]!) + BigInt(match[2]!)).toString());
});
await new Promise<void>((resolve) => baseline.listen(0, '127.0.0.1', resolve));
announce({ ours: ours.urls[0]!.url.replace('/add/{a}/{b}', ''), baseline: `http://127.0.0.1:${(baseline.address() as AddressInfo).port}` }, () =>
  Promise.all([ours.close(), new Promise((resolve) => baseline.close(resolve))]),
);
