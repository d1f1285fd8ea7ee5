import { describe, expect, it } from 'vitest';
import { formatBytes } from './usage';

describe('formatBytes', () => {
  it('uses decimal units with one decimal below 10', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(999)).toBe('999 B');
    expect(formatBytes(1000)).toBe('1.0 kB');
    expect(formatBytes(13_000)).toBe('13 kB');
    expect(formatBytes(104_857_600)).toBe('105 MB');
    expect(formatBytes(2.5e12)).toBe('2.5 TB');
  });
});
