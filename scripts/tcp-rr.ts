/**
 * TCP request/response round trips on one connection (what netperf calls TCP_RR), for the multi-host
 * benchmark: the bench runs it inside a pod's network namespace (`nsenter --net=/proc/<pid>/ns/net`),
 * so the traffic takes exactly the pod network's path while the image needs no tools of its own.
 *   node dist/scripts/tcp-rr.js server <port>            echo every message back
 *   node dist/scripts/tcp-rr.js client <host> <port> <n> n sequential 32-byte round trips; prints
 *                                                        {"median":µs,"p99":µs} after 200 warm-up ones
 */
import net from 'node:net';

const WARMUP = 200;
const PAYLOAD = Buffer.alloc(32, 0x61);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

function serve(port: number): void {
  const server = net.createServer((socket) => {
    socket.setNoDelay(true);
    socket.on('data', (d) => socket.write(d));
    socket.on('error', () => socket.destroy());
  });
  server.listen(port, () => console.log('listening'));
}

function measure(host: string, port: number, count: number): void {
  const rtts: number[] = [];
  let sentAt = 0n;
  let received = 0;
  let done = 0;
  const socket = net.connect(port, host, () => {
    socket.setNoDelay(true);
    send();
  });
  const send = () => {
    sentAt = process.hrtime.bigint();
    socket.write(PAYLOAD);
  };
  socket.on('data', (d) => {
    // TCP may split or join messages; one round trip ends when a whole payload came back.
    received += d.length;
    if (received < PAYLOAD.length) return;
    received -= PAYLOAD.length;
    const micros = Number(process.hrtime.bigint() - sentAt) / 1000;
    if (++done > WARMUP) rtts.push(micros);
    if (done < WARMUP + count) return send();
    socket.end();
    rtts.sort((a, b) => a - b);
    console.log(JSON.stringify({ median: percentile(rtts, 50), p99: percentile(rtts, 99) }));
  });
  socket.on('error', (err) => {
    console.error(err.message);
    process.exit(1);
  });
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'server') serve(Number(args[0]));
else if (mode === 'client') measure(args[0]!, Number(args[1]), Number(args[2] ?? 2000));
else {
  console.error('usage: tcp-rr server <port> | tcp-rr client <host> <port> <count>');
  process.exit(2);
}
