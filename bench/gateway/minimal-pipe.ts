/**
 * Bench line (m): the floor for any Node proxy built like the gateway: raw
 * sockets, the gateway's own MessageParser both ways, a keep-alive upstream
 * pool, and nothing else (no routing, added headers, plugins, timeouts or
 * error handling). Not a product: it shows how much of (c)/(d) is sockets
 * and parsing. Run in its own process: `node --import tsx minimal-pipe.ts
 * <port> <backend port>`; prints "ready" when listening.
 */
import net from 'node:net';
import { HttpParsers, MessageParser, type MessageHead } from '../../src/gateway/http/parser.ts';

const parsers = new HttpParsers();

const [port, backendPort] = process.argv.slice(2).map(Number);

/** One upstream connection; the whole response goes to `client` as one string. */
class Upstream {
  readonly socket = net.connect(backendPort!, '127.0.0.1');
  client: net.Socket | null = null;
  private text = '';
  private readonly parser = new MessageParser(parsers, 'response', this, 64 * 1024);

  constructor() {
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => this.parser.execute(chunk));
    this.socket.on('error', () => undefined);
    this.socket.on('close', () => {
      this.parser.close();
      const at = idle.indexOf(this);
      if (at >= 0) idle.splice(at, 1);
    });
  }

  onHead(head: MessageHead): boolean {
    this.text = `HTTP/1.1 ${head.statusCode} OK\r\n`;
    for (let i = 0; i < head.rawHeaders.length; i += 2) this.text += `${head.rawHeaders[i]}: ${head.rawHeaders[i + 1]}\r\n`;
    this.text += '\r\n';
    return false;
  }

  onBody(chunk: Buffer): void {
    this.text += chunk.toString('latin1');
  }

  onComplete(): void {
    idle.push(this);
    this.client?.write(this.text, 'latin1');
  }
}

const idle: Upstream[] = [];

net
  .createServer((client) => {
    client.setNoDelay(true);
    client.on('error', () => undefined);
    const parser = new MessageParser(
      parsers,
      'request',
      {
        onHead(head) {
          let text = `${head.method} /api/getusers HTTP/1.1\r\n`;
          for (let i = 0; i < head.rawHeaders.length; i += 2) text += `${head.rawHeaders[i]}: ${head.rawHeaders[i + 1]}\r\n`;
          const upstream = idle.pop() ?? new Upstream();
          upstream.client = client;
          upstream.socket.write(`${text}\r\n`, 'latin1');
          return false;
        },
        onBody: () => undefined,
        onComplete: () => undefined,
      },
      16 * 1024,
    );
    client.on('data', (chunk: Buffer) => parser.execute(chunk));
    client.on('close', () => parser.close());
  })
  .listen(port, '127.0.0.1', () => process.stdout.write('ready\n'));
