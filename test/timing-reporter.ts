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

/**
 * A test's or suite's result comes after its children's, and a suite's start may come after them
 * too, so full names are built from results: a suite that finishes claims the records still waiting
 * in its file whose names reach no higher than below it (its descendants; an earlier sibling's were
 * claimed by that sibling) and puts its name in front.
 * Records leave once the top-level test or suite around them has finished, or at the end of the run.
 */
export default async function* timingReporter(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  // `outermost`: the nesting of the outermost name on the record's path so far.
  const waiting = new Map<string, { outermost: number; record: TestRecord }[]>();
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    const { data } = event;
    const file = data?.file;
    if (!file) continue;
    const outcome = event.type === 'test:fail' ? 'fail' : data.skip !== undefined && data.skip !== false ? 'skip' : data.todo !== undefined && data.todo !== false ? 'todo' : 'pass';
    const record: TestRecord = {
      kind: 'test',
      file,
      path: [data.name],
      ms: Math.round(data.details?.duration_ms ?? 0),
      outcome,
      suite: data.details?.type === 'suite',
    };
    const pending = waiting.get(file) ?? [];
    for (const descendant of pending) {
      if (descendant.outermost <= data.nesting) continue; // a sibling's, or claimed by one
      descendant.record.path.unshift(data.name);
      descendant.outermost = data.nesting;
    }
    pending.push({ outermost: data.nesting, record });
    if (data.nesting === 0) {
      for (const done of pending) yield `${JSON.stringify(done.record)}\n`;
      waiting.delete(file);
    } else {
      waiting.set(file, pending);
    }
  }
  // A suite declared inside a helper module (describeEachKubectl) reports that module as its file,
  // so it never claims its tests: they leave here, counted, under the names they have.
  for (const pending of waiting.values()) for (const done of pending) yield `${JSON.stringify(done.record)}\n`;
}
