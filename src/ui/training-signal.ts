/**
 * "Someone is training in this browser": every tab of the page says, over one BroadcastChannel, whether it
 * trains and what (the lesson, a run), and hears the others. A tab that hears another train disables what
 * would train or delete (Start, Step, the experiments, Reset, "Run the lesson again") and says why, so a
 * class on one machine never trains twice side by side on its few cores, nor deletes what a neighbour's tab
 * is writing. This is wider than the per-run lock (platform/browser/run-lock.ts), which only keeps two tabs
 * from writing the same run and offers "Take over"; that stays as it is.
 *
 * A training tab repeats its message every `beatMs` (2 s) and says 'idle' when it stops or closes; a message
 * not repeated within `expireMs` (6 s) is forgotten (a crashed or frozen tab releases the others). A new
 * tab asks 'who' and the training tabs answer at once, so it knows within a moment of opening.
 *
 * For: App.svelte (RunState.elsewhere). Not for: the lock on one run (run-lock.ts), or anything in the worker.
 * Example: const s = new TrainingSignal((w) => (run.elsewhere = w));
 *          s.set('the lesson is running');   // the other tabs' callbacks get 'the lesson is running'
 *          s.set(null);                      // ... and null
 */
type Message = { type: 'training'; tab: string; what: string } | { type: 'idle'; tab: string } | { type: 'who'; tab: string };

export const TRAINING_CHANNEL = 'mappa-training';

export class TrainingSignal {
  readonly tab = `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
  private readonly channel: BroadcastChannel | null;
  private readonly others = new Map<string, { what: string; at: number }>();
  private mine: string | null = null;
  private readonly timers: ReturnType<typeof setInterval>[] = [];
  private last: string | null = null;

  constructor(private readonly onChange: (elsewhere: string | null) => void, opts: { beatMs?: number; expireMs?: number } = {}) {
    const beatMs = opts.beatMs ?? 2000;
    const expireMs = opts.expireMs ?? 6000;
    this.channel = typeof BroadcastChannel === 'function' ? new BroadcastChannel(TRAINING_CHANNEL) : null;
    if (!this.channel) return; // no channel (an old browser): each tab guards only itself
    this.channel.onmessage = (e: MessageEvent<Message>) => this.hear(e.data);
    this.post({ type: 'who', tab: this.tab });
    this.timers.push(setInterval(() => {
      if (this.mine) this.post({ type: 'training', tab: this.tab, what: this.mine });
      const now = Date.now();
      for (const [tab, o] of this.others) if (now - o.at > expireMs) this.others.delete(tab);
      this.tell();
    }, Math.min(beatMs, expireMs / 3)));
  }

  /** What this tab trains now, in words ("the lesson is running"), or null when it trains nothing. */
  set(what: string | null): void {
    if (what === this.mine) return;
    this.mine = what;
    this.post(what ? { type: 'training', tab: this.tab, what } : { type: 'idle', tab: this.tab });
  }

  /** The tab closes: the others stop waiting for it at once. */
  close(): void {
    if (this.mine) this.post({ type: 'idle', tab: this.tab });
    this.mine = null;
    for (const t of this.timers) clearInterval(t);
    this.channel?.close();
  }

  private hear(m: Message): void {
    if (!m || m.tab === this.tab) return;
    if (m.type === 'who') {
      if (this.mine) this.post({ type: 'training', tab: this.tab, what: this.mine });
      return;
    }
    if (m.type === 'training') this.others.set(m.tab, { what: m.what, at: Date.now() });
    else this.others.delete(m.tab);
    this.tell();
  }

  private tell(): void {
    const what = [...this.others.values()].map((o) => o.what)[0] ?? null;
    if (what === this.last) return;
    this.last = what;
    this.onChange(what);
  }

  private post(m: Message): void {
    try {
      this.channel?.postMessage(m);
    } catch {
      // a closed channel (the tab is going): nothing to tell
    }
  }
}
