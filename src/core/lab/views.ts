// What the page shows of a played trajectory: each agent's turn (its text, the coach's verdict, the reward and the
// advantage it trained on) and the trajectory's task and outcome. Token ids and log-probs stay in the worker.
// The worker sends these in its 'trajectories' event (protocol.ts); the inspector, the credit view (credit-per-action.ts), the
// exports (transfer.ts) and the judge desk (judge-desk.ts) read them.
//
//   const v: TrajectoryView = { task: { id: 't1', problem: '2+2', answer: '4' }, sample: 0, actions: [...],
//                               finalAnswer: '4', correct: true };

/** One agent turn as the inspector shows it (token ids and log-probs left in the worker). */
export interface ActionView {
  agentId: string;
  role: string;
  turn: number;
  messages: { role: string; content: string }[];
  text: string;
  tokens: number;
  truncated: boolean;
  observation?: string;
  coach?: { raw: string; score: number; ok: boolean; attempts: number; correct?: boolean; reason?: string };
  reward?: number;
  /** The REINFORCE++ advantage the update trained this action on (mean over its tokens); absent when it was not trained. */
  advantage?: number;
  /** When an AI coach scored it: the rater's verdict (the team's rubric) on the same context, for comparison. */
  rater?: { score: number; reason?: string };
}

export interface TrajectoryView {
  task: { id: string; problem: string; answer: string };
  sample: number;
  /** In a tree of replays (reward counterfactual), which of each agent's replies this leaf continues (Trajectory.branch). */
  branch?: number[];
  actions: ActionView[];
  finalAnswer: string | null;
  correct: boolean;
}
