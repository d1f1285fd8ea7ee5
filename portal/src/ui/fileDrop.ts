// Files and folders from the browser: a drop's DataTransfer (folders walked
// through the File and Directory Entries API, webkitGetAsEntry, which is
// what Chromium, Firefox and Safari offer for a dropped folder) and the file
// pickers (<input type=file multiple>, with webkitdirectory for a folder).
import type { UploadFile } from '../state/upload';

/** What a drop or a picker gave: the files (paths relative to the drop) and every folder seen (empty ones too). */
export interface Picked {
  readonly files: UploadFile[];
  readonly folders: string[];
}

/** Reads every entry of a directory (readEntries answers in batches until an empty one). */
function readAll(dir: FileSystemDirectoryEntry): Promise<FileSystemEntry[]> {
  const reader = dir.createReader();
  const out: FileSystemEntry[] = [];
  return new Promise((resolve, reject) => {
    const next = () =>
      reader.readEntries((batch) => {
        if (batch.length === 0) return resolve(out);
        out.push(...batch);
        next();
      }, reject);
    next();
  });
}

async function walk(entry: FileSystemEntry, rel: string, into: { files: UploadFile[]; folders: string[] }): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
    into.files.push({ rel, file });
  } else if (entry.isDirectory) {
    into.folders.push(rel);
    for (const child of await readAll(entry as FileSystemDirectoryEntry)) await walk(child, `${rel}/${child.name}`, into);
  }
}

/**
 * Takes what a drop holds. It must be called inside the drop event (the
 * items are gone after it); the folders are walked afterwards.
 */
export function dropped(dt: DataTransfer): () => Promise<Picked> {
  const entries: FileSystemEntry[] = [];
  const loose: File[] = [];
  for (const item of [...dt.items]) {
    if (item.kind !== 'file') continue;
    const e = item.webkitGetAsEntry?.() ?? null;
    if (e) entries.push(e);
    else {
      const f = item.getAsFile();
      if (f) loose.push(f);
    }
  }
  if (entries.length === 0 && loose.length === 0) loose.push(...dt.files);
  return async () => {
    const into = { files: loose.map((file) => ({ rel: file.name, file })), folders: [] as string[] };
    for (const e of entries) await walk(e, e.name, into);
    return into;
  };
}

/** The files of a picker: a folder picker's carry their path below the chosen folder's parent (webkitRelativePath). */
export function picked(list: FileList | null): Picked {
  const files = [...(list ?? [])].map((file) => ({ rel: file.webkitRelativePath || file.name, file }));
  return { files, folders: [] };
}

/** Opens the browser's file (or folder) picker; onPick hears what was chosen (never when it was cancelled). */
export function openPicker(folder: boolean, onPick: (p: Picked) => void, doc: Document = document): void {
  const input = doc.createElement('input');
  input.type = 'file';
  input.multiple = true;
  if (folder) input.webkitdirectory = true;
  input.hidden = true;
  input.dataset['testid'] = folder ? 'upload-folder-input' : 'upload-files-input';
  input.addEventListener('change', () => {
    const p = picked(input.files);
    input.remove();
    if (p.files.length) onPick(p);
  });
  input.addEventListener('cancel', () => input.remove());
  doc.body.append(input);
  input.click();
}

/** Whether a drag carries files (not text or a link). */
export function carriesFiles(e: DragEvent): boolean {
  return !!e.dataTransfer && [...e.dataTransfer.types].includes('Files');
}
