/**
 * The server name a TLS client asks for (SNI), read from its ClientHello
 * before the handshake starts (read-tls-client-hello puts the bytes back),
 * so the handshake can begin with the right certificate. Choosing it later,
 * in Node's SNICallback, swaps the context mid-handshake, and OpenSSL then
 * keeps offering the first context's certificate when the two differ in
 * key type (an RSA certificate behind an ECDSA default, under TLS 1.3).
 */
import type { Socket } from 'node:net';
import { getExtensionData, readTlsClientHello } from 'read-tls-client-hello';

/**
 * The name, undefined when the client sent none (or no ClientHello the
 * reader understands: the handshake then fails on its own), or null when
 * the client went away or sent nothing within `timeoutMs`.
 */
export async function readServerName(socket: Socket, timeoutMs: number): Promise<string | undefined | null> {
  let timer: NodeJS.Timeout | undefined;
  let leave: () => void = () => {};
  const gone = new Promise<null>((resolve) => {
    leave = () => resolve(null);
    timer = setTimeout(leave, timeoutMs);
    socket.on('close', leave);
    // A reset before the hello arrives: nobody else listens yet.
    socket.on('error', leave);
  });
  const name = readTlsClientHello(socket).then(
    (hello) => getExtensionData(hello, 'server_name')?.serverName ?? undefined,
    () => undefined,
  );
  try {
    const found = await Promise.race([name, gone]);
    if (found === null) socket.destroy();
    return found;
  } finally {
    clearTimeout(timer);
    socket.off('close', leave);
    socket.off('error', leave);
  }
}
