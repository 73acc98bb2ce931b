// A hostile "PostgreSQL server" on loopback for the credential leak tests: it speaks just enough of the
// wire protocol (version 3.0) to ask for the password in the clear (AuthenticationCleartextPassword), then
// refuses the connection with an ErrorResponse whose message quotes the password it was sent, as a server
// (or a proxy in front of one) that echoes its input would. Answers an SSLRequest with 'N' (no TLS).
//
//   const server = await startEchoingPostgres();
//   …kubediff watch --state postgres://kubediff@127.0.0.1:<server.port>/db with PGPASSWORD=…
//   server.passwords  // what it was sent
//   await server.close();
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { createServer, type Socket } from 'node:net';

export interface EchoingPostgres {
  port: number;
  /** The passwords clients sent, in order. */
  readonly passwords: string[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;

export async function startEchoingPostgres(): Promise<EchoingPostgres> {
  const passwords: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let buffer = Buffer.alloc(0);
    let started = false;
    socket.on('data', (chunk) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          // Startup and SSLRequest messages: an int32 length (itself included), no type byte.
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          buffer = buffer.subarray(length);
          if (code === SSL_REQUEST) {
            socket.write('N');
            continue;
          }
          started = true;
          // AuthenticationCleartextPassword.
          socket.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
          continue;
        }
        // A typed message: a type byte, an int32 length (itself included), the payload.
        if (buffer.length < 5) return;
        const length = buffer.readInt32BE(1);
        if (buffer.length < 1 + length) return;
        const type = String.fromCharCode(buffer[0] as number);
        const payload = buffer.subarray(5, 1 + length);
        buffer = buffer.subarray(1 + length);
        if (type === 'p') {
          const password = payload.toString('utf8').replace(/\0$/, '');
          passwords.push(password);
          socket.end(errorResponse(`password authentication failed: "${password}" is not the password`));
          return;
        }
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as AddressInfo).port,
    passwords,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}

/** An ErrorResponse: severity FATAL, SQLSTATE 28P01 (invalid_password), and `message`. */
function errorResponse(message: string): Buffer {
  const fields = Buffer.concat([
    field('S', 'FATAL'),
    field('V', 'FATAL'),
    field('C', '28P01'),
    field('M', message),
    Buffer.from([0]),
  ]);
  const header = Buffer.alloc(5);
  header.write('E', 0);
  header.writeInt32BE(4 + fields.length, 1);
  return Buffer.concat([header, fields]);
}

function field(code: string, value: string): Buffer {
  return Buffer.concat([Buffer.from(code), Buffer.from(value, 'utf8'), Buffer.from([0])]);
}
