/** Listening on one of the hub's ports, a taken port reported by the option that names it. */
import type { AddressInfo, Server } from 'node:net';
import { translateListenError } from '../common/http.ts';

export async function listenOn(server: Server, host: string, port: number, portKey: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => reject(translateListenError(err, { host, port, component: 'hub', portKey })));
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}
