/**
 * How the service proxy hands rules to the kernel: one `nft -f -` per transaction (nft applies a whole
 * file atomically, or nothing of it). An interface, so unit tests record scripts instead of running nft.
 */
import { spawn } from 'node:child_process';

export interface NftExecutor {
  /** Applies `script` as one transaction; rejects with nft's error text when the kernel refused it. */
  apply(script: string): Promise<void>;
  /** Deletes a whole table if it exists (uninstall and test teardown; the agent never calls it). */
  deleteTable(family: string, table: string): Promise<void>;
}

export interface NftCommandOptions {
  /** the nft binary; default `nft` on PATH */
  bin?: string;
  /** kill nft when one transaction takes longer (default 60 s: 5,000 Services load in a few seconds) */
  timeoutMs?: number;
}

/** Runs the real nft. */
export class NftCommand implements NftExecutor {
  private readonly bin: string;
  private readonly timeoutMs: number;

  constructor(o: NftCommandOptions = {}) {
    this.bin = o.bin ?? 'nft';
    this.timeoutMs = o.timeoutMs ?? 60_000;
  }

  apply(script: string): Promise<void> {
    return this.run(['-f', '-'], script);
  }

  async deleteTable(family: string, table: string): Promise<void> {
    // `add` first makes the delete succeed whether or not the table exists, in one transaction.
    await this.run(['-f', '-'], `add table ${family} ${table}\ndelete table ${family} ${table}\n`);
  }

  private run(args: string[], input: string): Promise<void> {
    return new Promise((resolve, reject) => {
      const child = spawn(this.bin, args, { stdio: ['pipe', 'ignore', 'pipe'] });
      let stderr = '';
      const timer = setTimeout(() => child.kill('SIGKILL'), this.timeoutMs);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (d: string) => {
        if (stderr.length < 16_384) stderr += d;
      });
      child.on('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot run ${this.bin}: ${err.message}`));
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`${this.bin} -f - failed (${signal ?? code}): ${stderr.trim().slice(0, 4000)}`));
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(input);
    });
  }
}
