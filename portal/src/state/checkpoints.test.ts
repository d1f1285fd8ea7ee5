import { describe, expect, it } from 'vitest';
import { changesUnder, diffLines, holdingList, modeText, reasonLabel, restoreEffect, restorePlan, within } from './checkpoints';

describe('checkpoints helpers', () => {
  it('notes when a path listing searched only the newest checkpoints', () => {
    const c = { id: 'a' };
    const cut = holdingList({ checkpoints: [c], truncated: true });
    expect(cut.list).toEqual([c]);
    expect(cut.note).toBe('Older checkpoints were not searched.');
    expect(cut.none).toContain('older checkpoints were not searched');
    for (const r of [{ checkpoints: [c] }, { checkpoints: [c], truncated: false }]) {
      const all = holdingList(r);
      expect(all.note).toBe('');
      expect(all.none).toBe('No checkpoint or version holds this file yet.');
    }
    expect(holdingList({}).list).toEqual([]);
  });
  it('scopes changes to a path', () => {
    const cs = [{ path: 'a' }, { path: 'a/b.txt' }, { path: 'ab' }, { path: 'c' }];
    expect(changesUnder(cs, 'a').map((c) => c.path)).toEqual(['a', 'a/b.txt']);
    expect(changesUnder(cs, '').length).toBe(4);
    expect(within('ab', 'a')).toBe(false);
  });
  it('classifies diff lines', () => {
    const d = diffLines('--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n same\n-old\n+new\n\\ No newline at end of file\n');
    expect(d.map((l) => l.kind)).toEqual(['head', 'head', 'hunk', 'ctx', 'del', 'add', 'note']);
  });
  it('labels per-file versions', () => {
    expect(reasonLabel({ reason: 'CHECKPOINT_REASON_BEFORE_WEBDAV_WRITE' })).toBe('version: before a WebDAV client replaced or removed it');
    expect(reasonLabel({ reason: 'CHECKPOINT_REASON_MANUAL' })).toBe('');
  });
  it('says what a restore does', () => {
    expect(restoreEffect({ kind: 'CHANGE_KIND_ADDED' })).toBe('removed');
    expect(restoreEffect({ kind: 'CHANGE_KIND_REMOVED' })).toBe('recreated');
    expect(restoreEffect({ kind: 'CHANGE_KIND_MODIFIED' })).toBe('put back');
    expect(modeText(0o755)).toBe('0755');
  });
  it('counts every change of a restore, not only those listed', () => {
    const changes = Array.from({ length: 40 }, (_, i) => ({ path: `f${i}` }));
    const p = restorePlan({ changes, total_changes: 7000, truncated: true, plan_token: 'tok' });
    expect(p.total).toBe(7000);
    expect(p.shown.length).toBe(30);
    expect(p.more).toBe(7000 - 30);
    expect(p.token).toBe('tok');
    const small = restorePlan({ changes: [{ path: 'a' }], total_changes: 1 });
    expect([small.total, small.more, small.token]).toEqual([1, 0, '']);
    expect(restorePlan({}).total).toBe(0);
  });
});
