import { describe, expect, it } from 'vitest';
import { openCheckpoint } from '../../store/checkpoint.js';
import { MODEL_WINDOW, MoveModel, fitObservations } from './move-model.js';
import type { Observation } from './move-model.js';

const MB = 1_000_000;

describe('move-duration model', () => {
  it('recovers the fixed part and the part per byte, and a fifth of wild outliers moves neither by more than a few percent', () => {
    const clean: Observation[] = Array.from({ length: 40 }, (_, i) => [(i + 1) * MB, 2_000 + (i + 1) * 50]);
    expect(fitObservations(clean)).toMatchObject({ fixedMs: 2_000, perByteMs: 50 / MB });
    const dirty = clean.map((o, i): Observation => (i % 5 === 0 ? [o[0], o[1] * 20] : o));
    const fit = fitObservations(dirty);
    expect(Math.abs((fit?.fixedMs ?? 0) - 2_000)).toBeLessThan(200);
    expect(Math.abs((fit?.perByteMs ?? 0) * MB - 50)).toBeLessThan(5);
  });

  it('predicts the median duration for unknown sizes, nothing before three observations, and never a negative slope', () => {
    expect(
      fitObservations([
        [null, 10],
        [null, 20],
      ]),
    ).toBeNull();
    expect(
      fitObservations([
        [null, 10],
        [null, 30],
        [null, 20],
      ]),
    ).toEqual({ fixedMs: 20, perByteMs: 0, medianMs: 20 });
    expect(
      fitObservations([
        [1, 300],
        [2, 200],
        [3, 100],
      ])?.perByteMs,
    ).toBe(0);
  });

  it('keeps the most recent observations in the checkpoint, and starts afresh from a damaged value', () => {
    const store = openCheckpoint(':memory:');
    const m = new MoveModel(store);
    for (let i = 0; i < MODEL_WINDOW + 10; i++) m.observe('projects', MB, i < 10 ? 99_999 : 1_000);
    m.save(0);
    const again = new MoveModel(store);
    expect(again.predict('projects', MB)).toBe(1_000);
    expect((JSON.parse(store.getMoveModel('projects') ?? '{}') as { obs: unknown[] }).obs).toHaveLength(MODEL_WINDOW);
    expect(again.predict('snippets', null)).toBeNull();
    store.setMoveModel('projects', '{not json', 1);
    expect(new MoveModel(store).predict('projects', MB)).toBeNull();
  });
});
