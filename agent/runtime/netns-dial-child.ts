/**
 * The process behind NetnsDialer (netns-dialer.ts): started by `nsenter --net=<pod netns>`, so every socket it
 * creates lives in the pod's network namespace. It dials what the parent asks for over the IPC channel and
 * hands each connected socket back as a file descriptor; the socket stays in the pod's namespace, while its
 * bytes are read and written by the agent. It exits when the parent disconnects.
 *
 * Messages: parent → child `{ id, port }`; child → parent `{ id }` with the socket attached, or `{ id, error }`.
 * Kept free of imports beyond node:net, so it starts fast.
 */
import net from 'node:net';

interface DialRequest {
  id: number;
  port: number;
}

/** Tries each address in turn, as containerd's port forward tries IPv4 localhost, then IPv6. */
function connect(port: number, hosts: string[], errors: string[], done: (socket: net.Socket | undefined, errors: string[]) => void): void {
  const host = hosts[0];
  if (host === undefined) return done(undefined, errors);
  const socket = net.connect({ host, port });
  // Paused before it connects, the socket never starts reading: bytes a server sends first (a banner) stay
  // in the kernel for the agent, which owns the socket once it arrives there.
  socket.pause();
  socket.once('connect', () => done(socket, errors));
  socket.once('error', (err) => {
    socket.destroy();
    connect(port, hosts.slice(1), [...errors, `${host}:${port}: ${err.message}`], done);
  });
}

process.on('message', (msg: DialRequest) => {
  if (typeof msg?.id !== 'number' || !Number.isInteger(msg.port) || msg.port < 1 || msg.port > 65535) return;
  connect(msg.port, ['127.0.0.1', '::1'], [], (socket, errors) => {
    if (!socket) return void process.send?.({ id: msg.id, error: errors.join('; ') });
    socket.removeAllListeners('error');
    socket.on('error', () => socket.destroy());
    // Sending closes this process's copy of the descriptor (keepOpen is false).
    process.send?.({ id: msg.id }, socket, {}, (err: Error | null) => {
      if (err) socket.destroy();
    });
  });
});
process.on('disconnect', () => process.exit(0));
