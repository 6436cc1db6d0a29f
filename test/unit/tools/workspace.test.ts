import { describe, expect, it } from 'vitest';
import { Workspace, normalizeWorkspacePath } from '../../../src/core/tools/workspace.ts';

describe('Workspace', () => {
  it('normalises paths and refuses escapes', () => {
    expect(normalizeWorkspacePath('./out//b/../c.txt')).toBe('out/c.txt');
    expect(normalizeWorkspacePath('/abs/x')).toBe('abs/x'); // rooted at the workspace, not the host
    expect(() => normalizeWorkspacePath('../etc/passwd')).toThrow(/leaves the workspace/);
    expect(() => normalizeWorkspacePath('a/../..')).toThrow(/leaves the workspace/);
    expect(() => normalizeWorkspacePath('.')).toThrow(/names no file/);
  });
  it('stores bytes and text with owners; unchanged files keep their owner', () => {
    const ws = new Workspace();
    ws.write('a.txt', 'héllo', 'analyst');
    ws.write('b.bin', new Uint8Array([1, 2, 3]), 'modeler');
    expect(ws.readText('a.txt')).toBe('héllo');
    expect(ws.list()).toEqual([
      { path: 'a.txt', size: 6, owner: 'analyst', version: 1 },
      { path: 'b.bin', size: 3, owner: 'modeler', version: 2 },
    ]);
    ws.applyChanges([{ path: 'a.txt', bytes: new TextEncoder().encode('héllo') }, { path: 'c.txt', bytes: new Uint8Array([65]) }], ['b.bin'], 'coder');
    expect(ws.list().map((f) => [f.path, f.owner])).toEqual([['a.txt', 'analyst'], ['c.txt', 'coder']]);
  });
});
