// Workspace: the per-trajectory in-memory file store that sandboxed code sees as its only file system.
//
// For: handing files between the agents of one trajectory (the Data Analyst writes `clean.csv`, the
// Modeler reads it), and telling the data-analysis coach which agent produced which file (owner tags).
// Not for: persistence (nothing touches disk) or large data (everything lives in memory, at most
// WORKSPACE_MAX_FILES files and WORKSPACE_MAX_BYTES bytes: a write past them throws WorkspaceFull).
//
// Paths are relative, '/'-separated and normalised; anything that tries to leave the root is refused:
//   ws.write('data/a.csv', 'x,y\n1,2\n', 'analyst');  ws.list() -> [{path: 'data/a.csv', size: 8, owner: 'analyst', ...}]
//   ws.write('../etc/passwd', '')  -> throws "path '../etc/passwd' leaves the workspace"

export interface WorkspaceEntry {
  path: string;
  size: number; // bytes
  owner: string; // agent (role) that last wrote the file
  version: number; // increments on every write; lets callers see what changed
}

interface StoredFile {
  bytes: Uint8Array;
  owner: string;
  version: number;
}

const MAX_PATH_LENGTH = 200;
/** The workspace's caps: what every interpreter gets copied in, and what a run may leave behind. */
export const WORKSPACE_MAX_BYTES = 64 * 2 ** 20;
export const WORKSPACE_MAX_FILES = 1000;

/** Thrown when a write would take the workspace past WORKSPACE_MAX_BYTES or WORKSPACE_MAX_FILES. */
export class WorkspaceFull extends Error {}

/**
 * Turns a user-supplied path into the canonical key, or throws.
 * Example: normalizeWorkspacePath('./out//b/../c.txt') -> 'out/c.txt'
 */
export function normalizeWorkspacePath(path: string): string {
  const parts: string[] = [];
  for (const part of path.replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (parts.length === 0) throw new Error(`path '${path}' leaves the workspace; use a relative path inside it`);
      parts.pop();
      continue;
    }
    parts.push(part);
  }
  const normalized = parts.join('/');
  if (normalized === '') throw new Error(`path '${path}' names no file; give a file name such as 'out.txt'`);
  if (normalized.length > MAX_PATH_LENGTH) throw new Error(`path '${path.slice(0, 40)}...' is longer than ${MAX_PATH_LENGTH} characters`);
  return normalized;
}

export class Workspace {
  private files = new Map<string, StoredFile>();
  private counter = 0;

  /** Writes (or replaces) a file. Strings are stored as UTF-8. */
  write(path: string, data: Uint8Array | string, owner = 'unknown'): void {
    const key = normalizeWorkspacePath(path);
    const bytes = typeof data === 'string' ? new TextEncoder().encode(data) : new Uint8Array(data);
    this.checkRoom([{ path: key, size: bytes.length }], []);
    this.files.set(key, { bytes, owner, version: ++this.counter });
  }

  /** Total bytes stored. */
  bytes(): number {
    let total = 0;
    for (const f of this.files.values()) total += f.bytes.length;
    return total;
  }

  /** Throws WorkspaceFull when writing `writes` and deleting `deletes` would pass the caps. */
  private checkRoom(writes: { path: string; size: number }[], deletes: string[]): void {
    const sizes = new Map([...this.files].map(([p, f]) => [p, f.bytes.length]));
    for (const p of deletes) sizes.delete(p);
    for (const w of writes) sizes.set(w.path, w.size);
    let total = 0;
    for (const size of sizes.values()) total += size;
    if (sizes.size > WORKSPACE_MAX_FILES || total > WORKSPACE_MAX_BYTES) {
      throw new WorkspaceFull(`the workspace holds at most ${WORKSPACE_MAX_FILES} files and ${WORKSPACE_MAX_BYTES / 2 ** 20} MB `
        + `(this would make ${sizes.size} files, ${(total / 2 ** 20).toFixed(1)} MB); nothing was saved`);
    }
  }

  /** The file's bytes (a copy), or undefined when there is no such file. */
  read(path: string): Uint8Array | undefined {
    const file = this.files.get(normalizeWorkspacePath(path));
    return file ? new Uint8Array(file.bytes) : undefined;
  }

  /** The file decoded as UTF-8, or undefined. */
  readText(path: string): string | undefined {
    const bytes = this.read(path);
    return bytes ? new TextDecoder().decode(bytes) : undefined;
  }

  has(path: string): boolean {
    return this.files.has(normalizeWorkspacePath(path));
  }

  delete(path: string): boolean {
    return this.files.delete(normalizeWorkspacePath(path));
  }

  /** All files sorted by path, with size and owner. */
  list(): WorkspaceEntry[] {
    return [...this.files.entries()]
      .map(([path, f]) => ({ path, size: f.bytes.length, owner: f.owner, version: f.version }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }

  /** A copy whose later writes the original does not see (a branch of a tree-shaped rollout); stored bytes are shared, never written in place. */
  clone(): Workspace {
    const w = new Workspace();
    w.files = new Map(this.files);
    w.counter = this.counter;
    return w;
  }

  /** Files and bytes for mounting into an interpreter (bytes are copies). */
  snapshot(): { path: string; bytes: Uint8Array }[] {
    return [...this.files.entries()].map(([path, f]) => ({ path, bytes: new Uint8Array(f.bytes) }));
  }

  /**
   * Applies what a run did: files it created or changed now belong to `owner`; files it deleted go.
   * Unchanged files keep their owner, so a reader never becomes the owner of what it only read.
   */
  applyChanges(changed: { path: string; bytes: Uint8Array }[], deleted: string[], owner: string): void {
    this.checkRoom(changed.map((c) => ({ path: normalizeWorkspacePath(c.path), size: c.bytes.length })), deleted.map(normalizeWorkspacePath));
    for (const path of deleted) this.files.delete(normalizeWorkspacePath(path));
    for (const { path, bytes } of changed) {
      const old = this.files.get(normalizeWorkspacePath(path));
      if (old && sameBytes(old.bytes, bytes)) continue;
      this.write(path, bytes, owner);
    }
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
