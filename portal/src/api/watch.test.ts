import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { LiveStream, STABLE_AFTER_MS, type StreamStatus } from './watch';

/** A stand-in for EventSource: the test emits its events. */
class FakeES {
  readonly url: string;
  closed = false;
  #l = new Map<string, ((m: MessageEvent<string>) => void)[]>();
  constructor(url: string) {
    this.url = url;
  }
  addEventListener(name: string, fn: (m: MessageEvent<string>) => void): void {
    this.#l.set(name, [...(this.#l.get(name) ?? []), fn]);
  }
  emit(name: string, data: unknown = {}): void {
    for (const fn of this.#l.get(name) ?? []) fn({ data: JSON.stringify(data) } as MessageEvent<string>);
  }
  close(): void {
    this.closed = true;
  }
}

describe('LiveStream reconnects', () => {
  let opened: FakeES[];
  let statuses: StreamStatus[];
  let stream: LiveStream;
  const last = () => opened[opened.length - 1]!;
  const ready = (id: string) => last().emit('change', { id, kind: 'WATCH_EVENT_KIND_READY' });

  beforeEach(async () => {
    vi.useFakeTimers();
    vi.spyOn(Math, 'random').mockReturnValue(0.5); // no jitter: 500, 1000, 2000 ms…
    opened = [];
    statuses = [];
    stream = new LiveStream(
      (from) => `/watch?resume_after=${from}`,
      '',
      { event: () => {}, status: (s) => statuses.push(s) },
      (u) => {
        const es = new FakeES(u);
        opened.push(es);
        return es as unknown as EventSource;
      },
    );
    await Promise.resolve(); // the first open is a microtask
  });
  afterEach(() => {
    stream.close();
    vi.useRealTimers();
    vi.restoreAllMocks();
  });

  it('keeps backing off when each stream ends right after READY', () => {
    expect(opened).toHaveLength(1);
    ready('e-1');
    last().emit('end');
    vi.advanceTimersByTime(500);
    expect(opened).toHaveLength(2);
    expect(last().url).toBe('/watch?resume_after=e-1');
    ready('e-2');
    last().emit('end');
    // READY alone did not reset the backoff: the next wait is 1 s, not 0.5 s.
    vi.advanceTimersByTime(600);
    expect(opened).toHaveLength(2);
    vi.advanceTimersByTime(400);
    expect(opened).toHaveLength(3);
    ready('e-3');
    last().emit('end');
    vi.advanceTimersByTime(1999);
    expect(opened).toHaveLength(3);
    vi.advanceTimersByTime(1);
    expect(opened).toHaveLength(4);
    expect(statuses.filter((s) => s.kind === 'live')).toHaveLength(3);
  });

  it('starts the backoff again once a stream stayed up', () => {
    ready('e-1');
    last().emit('end');
    vi.advanceTimersByTime(500);
    ready('e-2');
    last().emit('end');
    vi.advanceTimersByTime(1000);
    expect(opened).toHaveLength(3);
    ready('e-3');
    vi.advanceTimersByTime(STABLE_AFTER_MS);
    last().emit('end');
    vi.advanceTimersByTime(500);
    expect(opened).toHaveLength(4);
  });

  it('a stream that ends before it proved stable does not reset the backoff later', () => {
    ready('e-1');
    last().emit('end');
    vi.advanceTimersByTime(500);
    expect(opened).toHaveLength(2);
    ready('e-2');
    vi.advanceTimersByTime(STABLE_AFTER_MS - 1);
    last().emit('error');
    // The stable timer of the lost stream must not fire for the next one.
    vi.advanceTimersByTime(1000);
    expect(opened).toHaveLength(3);
    last().emit('error'); // before any READY
    vi.advanceTimersByTime(1999);
    expect(opened).toHaveLength(3);
    vi.advanceTimersByTime(1);
    expect(opened).toHaveLength(4);
  });
});
