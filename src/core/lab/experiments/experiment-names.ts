/**
 * The experiments by name, with what the page says while each runs: the one list the lab's state
 * (lab-state.ts: what a running lab is doing), its worker interface (protocol.ts: the `experiment`
 * request and event) and its registry (experiments.ts: how each is opened) are derived from. Light on
 * purpose (no runner, no model): the page imports it to word its buttons.
 *
 * A new experiment (the coming coaches in tiers, say) is one row here and one in experiments.ts, a
 * folder beside lesson/ with its runner and its maths, and its view in protocol.ts ExperimentViews:
 * no new request, no new event kind, no new state.
 *
 * `goOn` is the label of the button that resumes a paused experiment: the page's button and the lab's "paused: press …"
 * message both read it, so the words the status asks for are the words on the button.
 *
 * Example: EXPERIMENT_WORDS.scale.doing -> 'the team-scaling experiment is running'
 */
export const EXPERIMENT_WORDS = {
  lesson: {
    doing: 'the lesson is running',
    running: 'the lesson: relay teams of 2, 4 and 6 agents, process vs outcome reward',
    goOn: 'Go on with the lesson',
  },
  creditMethods: {
    doing: 'the credit comparison is running',
    running: 'comparing credit methods: process, outcome, counterfactual and groups at 4 agents',
    goOn: 'Go on comparing credit methods',
  },
  scale: {
    doing: 'the team-scaling experiment is running',
    running: 'scaling the team: relay teams of 8, 16 and 32 agents, process (AI judge) vs outcome reward',
    goOn: 'Go on scaling the team',
  },
} as const satisfies Record<string, { doing: string; running: string; goOn: string }>;

export type ExperimentName = keyof typeof EXPERIMENT_WORDS;

/** Every experiment's name, in the order the page reads them back. */
export const EXPERIMENT_NAMES = Object.keys(EXPERIMENT_WORDS) as ExperimentName[];
