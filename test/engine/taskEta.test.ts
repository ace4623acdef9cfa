/**
 * A task's ETA is always a finite whole number (the status answer's schema takes an integer): a NaN at the last
 * image's final progress event (fraction 1 with an ETA) once made a status poll answer 500 "Error getting data".
 */
import { describe, expect, it } from 'vitest';
import { taskEtaSeconds } from '../../engine/service/tasks/taskEta.js';

describe('taskEtaSeconds', () => {
  it('is finite at the end of the last image, with or without time left', () => {
    expect(taskEtaSeconds(1, 0, 1)).toBe(0);
    expect(taskEtaSeconds(1, 3, 1)).toBe(3);
    expect(taskEtaSeconds(1, 0, 6)).toBe(0);
    expect(taskEtaSeconds(1, 2.4, 6)).toBe(2);
  });

  it('assumes each later image takes as long as the current one (its elapsed + remaining)', () => {
    // Image 0 of 3 is half done with 10 s left: it takes 20 s in all, so two more take 40 s.
    expect(taskEtaSeconds(0.5 / 3, 10, 3)).toBe(50);
    // Image 2 of 3 (the last) half done: only its own 10 s.
    expect(taskEtaSeconds(2.5 / 3, 10, 3)).toBe(10);
    // At an image boundary the next image's own ETA stands for each remaining one.
    expect(taskEtaSeconds(1 / 3, 8, 3)).toBe(16);
  });

  it('says nothing rather than a number that is not one', () => {
    expect(taskEtaSeconds(Number.NaN, 5, 2)).toBeUndefined();
    expect(taskEtaSeconds(0.5, Number.POSITIVE_INFINITY, 2)).toBeUndefined();
    expect(taskEtaSeconds(0.5, 5, 0)).toBeUndefined();
    for (let f = 0; f <= 1.0001; f += 0.01)
      for (const eta of [0, 0.001, 1, 1e6])
        for (const n of [1, 2, 7]) {
          const v = taskEtaSeconds(f, eta, n);
          expect(Number.isInteger(v), `${f} ${eta} ${n} → ${v}`).toBe(true);
        }
  });
});
