/**
 * Owns the agent's own nginx process: started with `nginx -p <dir> -c <dir>/nginx.conf` (never the
 * system nginx service or its files), its pid in <dir>/nginx.pid, a new configuration checked with
 * `nginx -t` before it replaces the old one, and reloaded with SIGHUP only when the text changed
 * (nginx's reload starts new workers on the new configuration and lets the old ones finish their
 * requests, so a reload refuses no connection). A master left running by an agent that was killed
 * is adopted by the next one from the pid file. Also: whether a port is free, before nginx is asked
 * to take it, so the refusal can say which port and why.
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileP = promisify(execFile);

/** The nginx binary on PATH (Debian's package puts it in /usr/sbin), or undefined. */
export function findNginx(): string | undefined {
  for (const dir of [...(process.env.PATH ?? '').split(':'), '/usr/sbin', '/usr/local/sbin', '/sbin']) {
    if (!dir) continue;
    const candidate = path.join(dir, 'nginx');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** Resolves with undefined when `port` can be listened on (all IPv4 addresses), else with the error code (EADDRINUSE, EACCES). */
export function portProblem(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
    server.listen({ port, host: '0.0.0.0', exclusive: true }, () => server.close(() => resolve(undefined)));
  });
}

export interface NginxProcessOptions {
  /** nginx's prefix directory (the agent's ingress directory) */
  dir: string;
  binary: string;
}

export class NginxProcess {
  readonly confFile: string;
  private readonly pidFile: string;
  private current: string | undefined;

  constructor(private readonly opts: NginxProcessOptions) {
    this.confFile = path.join(opts.dir, 'nginx.conf');
    this.pidFile = path.join(opts.dir, 'nginx.pid');
    for (const sub of ['logs', 'tmp', 'certs']) fs.mkdirSync(path.join(opts.dir, sub), { recursive: true, mode: 0o700 });
    // Workers run as nobody: they buffer large bodies in tmp/ and need to write there.
    try {
      fs.chownSync(path.join(opts.dir, 'tmp'), 65534, 65534);
    } catch {
      // not root: nginx then keeps running as this user, and tmp/ is already its own
    }
  }

  /** The master's pid when one of ours is running (a stale pid file or someone else's process is not). */
  pid(): number | undefined {
    let pid: number;
    try {
      pid = Number(fs.readFileSync(this.pidFile, 'utf8').trim());
    } catch {
      return undefined;
    }
    if (!Number.isInteger(pid) || pid <= 0) return undefined;
    try {
      const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return cmdline.includes('nginx') && cmdline.includes(this.opts.dir) ? pid : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Makes `text` the running configuration: checked with `nginx -t` first (a configuration nginx
   * refuses changes nothing and throws with nginx's message), then nginx is started or reloaded.
   * Returns false when the text is what is already running.
   */
  async apply(text: string): Promise<boolean> {
    const running = this.pid();
    if (running !== undefined && text === this.current) return false;
    const next = `${this.confFile}.next`;
    fs.writeFileSync(next, text, { mode: 0o600 });
    try {
      await execFileP(this.opts.binary, ['-t', '-q', '-p', `${this.opts.dir}/`, '-c', next]);
    } catch (e) {
      const stderr = (e as { stderr?: string }).stderr ?? (e as Error).message;
      throw new Error(`nginx refused the configuration: ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    }
    fs.renameSync(next, this.confFile);
    this.current = text;
    if (running !== undefined) {
      process.kill(running, 'SIGHUP');
      return true;
    }
    // nginx daemonizes: the command returns once the master is up (or failed to bind).
    try {
      await execFileP(this.opts.binary, ['-p', `${this.opts.dir}/`, '-c', this.confFile]);
    } catch (e) {
      this.current = undefined;
      const stderr = (e as { stderr?: string }).stderr ?? (e as Error).message;
      throw new Error(`nginx did not start: ${stderr.trim().split('\n').slice(-3).join(' ')}`);
    }
    return true;
  }

  /** Graceful stop (SIGQUIT: workers finish their requests); waits up to `timeoutMs`, then kills. */
  async stop(timeoutMs = 5000): Promise<void> {
    const pid = this.pid();
    this.current = undefined;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGQUIT');
    } catch {
      return;
    }
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        process.kill(pid, 0);
      } catch {
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone at last
    }
  }
}

/** A self-signed certificate for hosts without a usable Secret (and the default server), made once with openssl. */
export function ensureDefaultCertificate(files: { cert: string; key: string }): void {
  if (fs.existsSync(files.cert) && fs.existsSync(files.key)) return;
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '3650', '-subj', '/CN=berth-ingress-default', '-keyout', files.key, '-out', files.cert], { stdio: 'ignore' });
  fs.chmodSync(files.key, 0o600);
  fs.chmodSync(files.cert, 0o600);
}
