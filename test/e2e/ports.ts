/**
 * Loopback ports for the processes tests and benchmarks start (servers, etcd members): one the kernel
 * has just handed out and taken back, so two starts do not guess the same one.
 */
import net from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
