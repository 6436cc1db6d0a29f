/**
 * The inspector's presentation helpers: tab labels that name a failure's single culprit, the code
 * blocks the tools ran, and a score's colour. The credit maths (rewards and advantages under each
 * reward mode, "differ most") is the core's: core/lab/credit-per-action.ts.
 *
 * For: Inspector.svelte. Not for: computing credit (core/lab/credit-per-action.ts).
 * Example: trajectoryLabels(batch)[0].label -> "problem 1 · sample 1 · ✗ wrong (Verifier)"
 */
import { culprits } from '../core/lab/credit-per-action.ts';
import type { TrajectoryView } from '../core/lab/views.ts';
import { extractCodeBlocks } from '../core/tools/code-blocks.ts';

/** The code blocks of an agent's text that the tools ran (the sandbox's own parser: Python, JavaScript, SQL). */
export function codeBlocks(text: string): { lang: string; code: string }[] {
  return extractCodeBlocks(text, ['python', 'javascript', 'sql']).map((b) => ({ lang: b.language, code: b.code }));
}

/** Colour of a 0..10 score: red (0) through amber to green (10). */
export function scoreColour(score: number | undefined): string {
  if (score === undefined) return '#e5e7eb';
  const hue = Math.round((Math.max(0, Math.min(10, score)) / 10) * 120);
  return `hsl(${hue} 70% 88%)`;
}

/**
 * Readable tab labels for a batch: "problem 2 · sample 1 · ✓ right", or "✗ wrong (Verifier)" where
 * the coach blames one agent (its culprit); problems numbered in batch
 * order (1-based), samples 1-based; `title` keeps the raw task id and sample for the tooltip.
 * Example: ids [a, a, b] samples [0, 1, 0] -> problem 1 · sample 1, problem 1 · sample 2, problem 2 · sample 1; a leaf of a
 * tree of replays (reward counterfactual) adds its branch: "problem 1 · sample 1 · branch 1.2.1.1 · ✗ wrong".
 */
export function trajectoryLabels(trajs: TrajectoryView[]): { label: string; title: string }[] {
  const problems = new Map<string, number>();
  for (const t of trajs) if (!problems.has(t.task.id)) problems.set(t.task.id, problems.size + 1);
  return trajs.map((t) => ({
    label: `problem ${problems.get(t.task.id)} · sample ${t.sample + 1}${t.branch ? ` · branch ${t.branch.map((b) => b + 1).join('.')}` : ''} · `
      + `${t.correct ? '✓ right' : `✗ wrong${culprits(t).length === 1 ? ` (${culprits(t)[0]})` : ''}`}`,
    title: `${t.task.id} #${t.sample}`
      + (t.branch ? `; in the tree of replays, the reply of each agent this leaf continues: ${t.branch.map((b) => b + 1).join(', ')}` : ''),
  }));
}
