/** Listening on one of the hub's ports, a taken port reported by the option that names it. */
import type { AddressInfo, Server } from 'node:net';
import { translateListenError } from '../common/http.ts';

export function listenOn(server: Server, host: string, port: number, portKey: string): Promise<number> {
  const listened = listening(server, host, port, portKey);
  server.listen(port, host);
  return listened;
}

/** Waits for a server that was told to listen (by a library) to listen or fail. */
export async function listening(server: Server, host: string, port: number, portKey: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    const onError = (err: Error) => reject(translateListenError(err, { host, port, component: 'hub', portKey }));
    server.once('error', onError);
    server.once('listening', () => {
      server.off('error', onError);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}
