/**
 * A hub in a process of its own (for kill -9 and two-replica tests), loading
 * only the hub rather than every component the CLI knows. Options come as one
 * JSON argument; the RunningComponent's URLs and facts go to stdout as one JSON line.
 */
import { startHub } from '../../src/hub/server.ts';

const running = await startHub({ logLevel: 'silent', port: 0, restPort: 0, webSocketPort: 0, amqpPort: 0, ...(JSON.parse(process.argv[2] ?? '{}') as object) });
process.stdout.write(`${JSON.stringify({ urls: running.urls, facts: running.facts!.hub, caCertPath: running.caCertPath })}\n`);
process.on('SIGTERM', () => {
  void running.close().then(() => process.exit(0));
});
