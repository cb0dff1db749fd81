// The device data service in its own process, finding the replicas through mdns.
import { startDevData } from '../../src/devices/devdata-server.ts';
import { announce } from '../common/child.ts';

const devdata = await startDevData({
  logLevel: 'silent',
  port: 0,
  dataDir: process.env.BENCH_DEVICES_DATA!,
  serviceName: process.env.BENCH_DEVICES_SERVICE!,
  registry: 'mdns',
  registryRefreshMs: 500,
});
announce({ url: devdata.urls[0]!.url.replace('/data/{device}', ''), pid: process.pid }, () => devdata.close());
