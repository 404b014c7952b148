/**
 * Runs `count` calls of `fn` in batches of 1, 2, 4, … (each batch in parallel), stopping after the
 * first batch in which any call failed. A request that fails for every pod (quota, an invalid
 * template, a terminating namespace) then fails once, not a thousand times.
 * Returns how many calls succeeded and the first error, if any.
 */
export async function slowStartBatch(opts: {
  count: number;
  initialBatchSize?: number;
  fn: (index: number) => Promise<void>;
}): Promise<{ succeeded: number; error?: unknown }> {
  let remaining = opts.count;
  let succeeded = 0;
  let started = 0;
  for (let batch = Math.min(remaining, opts.initialBatchSize ?? 1); batch > 0; batch = Math.min(2 * batch, remaining)) {
    const results = await Promise.allSettled(Array.from({ length: batch }, (_, i) => opts.fn(started + i)));
    started += batch;
    let error: unknown;
    for (const r of results) {
      if (r.status === 'fulfilled') succeeded++;
      else error ??= r.reason;
    }
    if (error !== undefined) return { succeeded, error };
    remaining -= batch;
  }
  return { succeeded };
}
