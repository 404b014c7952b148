/**
 * A `node --test` reporter that owns the suite's per-test timing record: one JSON line per finished
 * test or suite (file, name path, duration, outcome), for scripts/test-timings.ts to rank and count.
 * It runs beside the spec reporter, which stays the one people read. Files' own wall times come
 * from test/file-clock.ts; both record shapes are defined here.
 */

interface TestEventData {
  name: string;
  nesting: number;
  file?: string;
  skip?: boolean | string;
  todo?: boolean | string;
  details?: { duration_ms?: number; type?: string };
}

interface TestEvent {
  type: string;
  data: TestEventData;
}

export interface TestRecord {
  kind: 'test';
  file: string;
  /** suite names and the test's own name, outermost first */
  path: string[];
  ms: number;
  outcome: 'pass' | 'fail' | 'skip' | 'todo';
  /** a describe() block rather than a test */
  suite: boolean;
}

export interface FileRecord {
  kind: 'file';
  file: string;
  startedAt: number;
  endedAt: number;
}

export default async function* timingReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  // The names of the open suites of each file, by nesting level, to give each test its full path.
  const openNames = new Map<string, string[]>();
  for await (const event of source) {
    const { data } = event;
    const file = data?.file;
    if (!file) continue;
    if (event.type === 'test:start') {
      const names = openNames.get(file) ?? [];
      names.length = data.nesting;
      names.push(data.name);
      openNames.set(file, names);
    } else if (event.type === 'test:pass' || event.type === 'test:fail') {
      const names = (openNames.get(file) ?? []).slice(0, data.nesting);
      const outcome = event.type === 'test:fail' ? 'fail' : data.skip !== undefined && data.skip !== false ? 'skip' : data.todo !== undefined && data.todo !== false ? 'todo' : 'pass';
      const record: TestRecord = {
        kind: 'test',
        file,
        path: [...names, data.name],
        ms: Math.round(data.details?.duration_ms ?? 0),
        outcome,
        suite: data.details?.type === 'suite',
      };
      yield `${JSON.stringify(record)}\n`;
    }
  }
}
