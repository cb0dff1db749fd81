// Our script server alone in a child process, so its CPU time (and its scripts') can be read from /proc.
import { startScripts } from '../../src/scripts/server.ts';
import { announce } from '../common/child.ts';

const [dataDir, scriptsDir] = process.argv.slice(2) as [string, string];
const ours = await startScripts({ port: 0, logLevel: 'silent', dataDir, scriptsDir, maxRunning: 64 });
announce({ url: ours.urls[0]!.url.replace(/\/$/, ''), pid: process.pid, rssMb: Math.round(process.memoryUsage().rss / 2 ** 20) }, () => ours.close());
