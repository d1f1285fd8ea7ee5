// Formatting of sizes, times and non-editable reasons for display.
import type { NonEditableReason } from '../api/types';

export function formatSize(size: string | number | undefined): string {
  const n = typeof size === 'string' ? Number(size) : (size ?? 0);
  if (!Number.isFinite(n) || n < 0) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatTime(iso: string | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '—';
  return d.toLocaleString(undefined, {
    year: 'numeric',
    month: 'short',
    day: 'numeric',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  });
}

export function reasonText(reason: NonEditableReason | undefined): string {
  switch (reason) {
    case 'NON_EDITABLE_REASON_TOO_LARGE':
      return 'The file is larger than 1 MiB, the limit for editing in the browser.';
    case 'NON_EDITABLE_REASON_BINARY':
      return 'The file is binary (it contains NUL bytes), so it cannot be shown as text.';
    case 'NON_EDITABLE_REASON_NOT_UTF8':
      return 'The file is not valid UTF-8 text, so it cannot be shown or edited here.';
    case 'NON_EDITABLE_REASON_MULTIPLE_LINKS':
      return 'The file has more than one hard link; it is not shown or edited here for safety.';
    default:
      return 'The file cannot be shown or edited in the browser.';
  }
}
