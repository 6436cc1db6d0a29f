/**
 * The few agents worth a line when a team is too large for one line each (a relay of 128): the worst by
 * its latest value (the lowest coach score; the highest KL) and the most changed from its first value to
 * its latest, each named with why. The rest are read off the heat map (AgentHeat.svelte).
 *
 * For: Charts.svelte's per-agent charts above HEAT_FROM agents. Not for: drawing.
 * Example: agentsThatMatter([{label: 'agent1', values: [5, 9]}, {label: 'agent2', values: [5, 2]}, {label: 'agent3', values: [6, 6]}], 'low', 1)
 *   -> [{ index: 1, label: 'agent2', why: 'worst: 2' }, { index: 0, label: 'agent1', why: 'most changed: +4' }]
 */

/** From this many agents on, a per-agent chart is a heat map with a few lines. */
export const HEAT_FROM = 9;

/** An agent's first and latest drawn values (null when it has none). */
function ends(values: (number | null)[]): { first: number; last: number } | null {
  const drawn = values.filter((v): v is number => v !== null && Number.isFinite(v));
  return drawn.length ? { first: drawn[0], last: drawn[drawn.length - 1] } : null;
}

const short = (v: number) => String(+v.toPrecision(3));

/**
 * Up to `k` worst agents (by latest value: 'low' is worst for a score, 'high' for a KL or a loss) and then
 * up to `k` most changed (|latest - first|, not already picked, a change of 0 never), in that order.
 */
export function agentsThatMatter(series: { label: string; values: (number | null)[] }[], worst: 'low' | 'high', k = 2)
  : { index: number; label: string; why: string }[] {
  const known = series.flatMap((s, index) => {
    const e = ends(s.values);
    return e ? [{ index, label: s.label, ...e }] : [];
  });
  const byWorst = [...known].sort((a, b) => (worst === 'low' ? a.last - b.last : b.last - a.last) || a.index - b.index).slice(0, k);
  const picked = new Set(byWorst.map((a) => a.index));
  const byChange = known.filter((a) => !picked.has(a.index) && a.last !== a.first)
    .sort((a, b) => Math.abs(b.last - b.first) - Math.abs(a.last - a.first) || a.index - b.index).slice(0, k);
  return [
    ...byWorst.map((a) => ({ index: a.index, label: a.label, why: `worst: ${short(a.last)}` })),
    ...byChange.map((a) => ({ index: a.index, label: a.label, why: `most changed: ${a.last > a.first ? '+' : '−'}${short(Math.abs(a.last - a.first))}` })),
  ];
}
