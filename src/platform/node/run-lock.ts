/**
 * One writer per run folder: `mappa train` holds `<out>/run.lock` while it writes there. The lock is
 * a file created with O_EXCL (`wx`), so of two processes started together exactly one gets it; it
 * names the holder (pid, host, command, start time) so that the second can say who has the run.
 * A lock whose process is gone (same host, pid not alive) is stale: it is taken over with a warning.
 * A stale lock is first renamed aside, which only one of two racing take-overs can do.
 *
 * For: `acquireRunLock(dir)` -> a RunLock to `release()`; the lock is also removed at process exit.
 * Not for: the page (a tab's lock is the Web Locks API, platform/browser/run-lock.ts).
 *
 * Example: const lock = acquireRunLock('runs/a', { command: 'mappa train' });
 *          // a second process: RunLockedError 'runs/a is being trained by pid 4242 on host-1 (mappa train, since 09:41:03) ...'
 *          lock.release();
 */
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const LOCK_FILE = 'run.lock';

export interface LockHolder {
  pid: number;
  host: string;
  command: string;
  started: string;
}

export class RunLockedError extends Error {
  constructor(message: string, readonly holder: LockHolder | null) {
    super(message);
    this.name = 'RunLockedError';
  }
}

/** Whether a process with this pid runs on this host (EPERM: it runs, as another user). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readHolder(file: string): LockHolder | null {
  try {
    const h = JSON.parse(readFileSync(file, 'utf8')) as LockHolder;
    return Number.isInteger(h.pid) && typeof h.host === 'string' ? h : null;
  } catch {
    return null; // being written by its holder this instant, or torn: treated as held
  }
}

export class RunLock {
  private released = false;
  private readonly onExit = () => this.release();

  constructor(readonly file: string, readonly holder: LockHolder) {
    process.once('exit', this.onExit);
  }

  /** Removes the lock if it is still this process's. Safe to call twice. */
  release(): void {
    if (this.released) return;
    this.released = true;
    process.removeListener('exit', this.onExit);
    const now = readHolder(this.file);
    if (now && now.pid === this.holder.pid && now.host === this.holder.host && now.started === this.holder.started) rmSync(this.file, { force: true });
  }
}

/**
 * Takes the run folder's lock, creating the folder. Throws RunLockedError when a live process holds
 * it; takes over a stale one (warning through `warn`).
 */
export function acquireRunLock(dir: string, opts: { command?: string; warn?: (message: string) => void } = {}): RunLock {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, LOCK_FILE);
  const holder: LockHolder = {
    pid: process.pid, host: os.hostname(), command: opts.command ?? process.argv.slice(1).join(' '), started: new Date().toISOString(),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      try {
        writeSync(fd, JSON.stringify(holder) + '\n');
      } finally {
        closeSync(fd);
      }
      return new RunLock(file, holder);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const other = readHolder(file);
    if (other ? other.host !== holder.host || alive(other.pid) : !unreadableForLong(file)) throw lockedError(dir, file, other);
    // Stale: its process is gone. Move it aside (only one racing process can), then try again.
    const aside = `${file}.stale-${process.pid}`;
    try {
      renameSync(file, aside);
      rmSync(aside, { force: true });
      const was = other
        ? `pid ${other.pid} (${other.command}, since ${other.started}), which is no longer running`
        : 'a process that died while taking it (the lock file is empty)';
      opts.warn?.(`${dir} was locked by ${was}; taking the run over`);
    } catch {
      // another process moved it first; the next attempt sees its lock
    }
  }
  throw lockedError(dir, file, readHolder(file));
}

/** An empty or torn lock file older than a few seconds: its writer died between creating and filling it. */
function unreadableForLong(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs > 5000;
  } catch {
    return true;
  }
}

function lockedError(dir: string, file: string, h: LockHolder | null): RunLockedError {
  const who = h ? `pid ${h.pid} on ${h.host} (${h.command}, since ${h.started})` : `another process (${file} cannot be read yet)`;
  const fix = h && h.host !== os.hostname()
    ? `if that machine no longer runs it, delete ${file}`
    : 'wait for it to finish, stop it (Ctrl-C keeps a checkpoint), or pass another --out';
  return new RunLockedError(`${dir} is being trained by ${who}; ${fix}`, h);
}

/** Whether the folder's lock is held by a live process (for read-only commands that want to say so). */
export function runLockHolder(dir: string): LockHolder | null {
  const file = path.join(dir, LOCK_FILE);
  if (!existsSync(file)) return null;
  const h = readHolder(file);
  return h && (h.host !== os.hostname() || alive(h.pid)) ? h : null;
}
