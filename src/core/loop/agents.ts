/**
 * What runs an agent: a small interface, so an agent can be the project's engine with its own LoRA
 * adapter, or a frozen teammate on another engine (a WebLLM model in the browser).
 *
 * For: `AgentBackend` and its engine implementation `EngineAgents` (batched generation per agent).
 * Not for: the order of the chain (rollout.ts) or training (rl/).
 *
 * Example: const agents = new EngineAgents(loaded, new Map([['solver', solverAdapter]]));
 *          const [r] = await agents.generate('solver', [{messages, maxTokens: 64, temperature: 1}], 7);
 */
import type { LoraAdapter } from '../engine/lora/adapter.ts';
import { generate, promptBatches, type GenerationProgress } from '../engine/model/generate.ts';
import { pausePoint } from '../engine/pause-point.ts';
import { stopTokenIds, type LoadedModel } from '../engine/model/load.ts';
import type { ChatMessage } from '../engine/tokenizer/chat.ts';

/**
 * Pre-fill attention cells (rows x longest prompt^2) one generation batch may hold. 16 math prompts of
 * ~600 tokens (5.8M) stay one batch; 8 data-team prompts of ~1500 tokens (18M) become three. Measured:
 * a rollout of 8 held-out tables grows the wasm heap to 1.35 GB unsplit, 0.78 GB split; tfjs-wasm
 * addresses about 2 GB safely, and the policy update needs room after it.
 */
const AGENT_PREFILL_CELLS = 8 * 1024 * 1024;

export interface GenerationRequest {
  messages: ChatMessage[];
  maxTokens: number;
  /** 0 = greedy. */
  temperature: number;
}

export interface GenerationResult {
  /** The prompt as the model saw it (chat template applied). */
  promptText: string;
  promptTokens: number[];
  tokens: number[];
  logprobs: number[];
  text: string;
  /** Ended by the token budget rather than end-of-turn. */
  truncated: boolean;
}

export interface AgentBackend {
  /** Generate one reply per request for agent `agentId`; `seed` makes sampling reproducible. */
  generate(agentId: string, requests: GenerationRequest[], seed: number): Promise<GenerationResult[]>;
  /** Whether this backend's outputs can be trained (token ids and log-probs of the project's engine). */
  readonly trainable: boolean;
}

/** Per request: the earlier request of the call whose greedy reply it repeats (the same prompt and budget), else -1. */
function greedyRepeats(requests: GenerationRequest[], prompts: { promptTokens: number[] }[]): number[] {
  const firstOf = new Map<string, number>();
  return requests.map((r, i) => {
    if (r.temperature > 0) return -1;
    const k = `${r.maxTokens}/${prompts[i].promptTokens.join(',')}`;
    const first = firstOf.get(k);
    if (first === undefined) firstOf.set(k, i);
    return first ?? -1;
  });
}

/** The project's engine: one base model, one adapter per agent (null = the base model). */
export class EngineAgents implements AgentBackend {
  readonly trainable = true;
  /** Pre-fill and decoding progress of each generate call (the page's progress bars). */
  onProgress?: (agentId: string, p: GenerationProgress) => void;
  /** Stops generation between two decoding steps or two prompts (generate throws the signal's reason). */
  signal?: AbortSignal;
  constructor(
    readonly loaded: LoadedModel,
    readonly adapters: Map<string, LoraAdapter | null>,
    /** Rows generated together; bounds memory. */
    readonly maxBatch = 16,
  ) {
    if (!loaded.tokenizer) throw new Error(`${loaded.source.name}: agents need a tokenizer (tokenizer.json) and a chat template`);
  }

  async generate(agentId: string, requests: GenerationRequest[], seed: number): Promise<GenerationResult[]> {
    const tok = this.loaded.tokenizer!;
    const adapter = this.adapters.get(agentId) ?? null;
    const eos = stopTokenIds(this.loaded);
    // Thousands of prompts take seconds to render and tokenize: a pause is checked between them.
    const prompts: { promptText: string; promptTokens: number[] }[] = [];
    for (const r of requests) {
      await pausePoint(this.signal);
      const promptText = tok.applyChatTemplate(r.messages, { addGenerationPrompt: true });
      prompts.push({ promptText, promptTokens: tok.encodeChat(r.messages, { addGenerationPrompt: true }) });
    }
    const out: GenerationResult[] = [];
    // A greedy request whose prompt an earlier request of this call has is answered by that one's
    // reply: greedy decoding is a function of the prompt (a relay agent meets 90 input cells, so an
    // evaluation of 200 tasks asks each about twice).
    const copyOf = greedyRepeats(requests, prompts);
    // Requests with equal settings are generated as one padded batch (slices of the call's requests in
    // order, so that a sampled row's batch and seed do not depend on the greedy rows next to it).
    for (let start = 0; start < requests.length; start += this.maxBatch) {
      const groups = new Map<string, number[]>();
      for (let i = start; i < Math.min(requests.length, start + this.maxBatch); i++) {
        if (copyOf[i] >= 0) continue;
        const k = `${requests[i].maxTokens}/${requests[i].temperature}`;
        groups.set(k, [...(groups.get(k) ?? []), i]);
      }
      // ...split where the pre-fill's attention would grow too large (rows x longest prompt^2).
      const batches = [...groups.values()].flatMap((g) =>
        promptBatches(g.map((i) => prompts[i].promptTokens.length), g.length, AGENT_PREFILL_CELLS).map((b) => b.map((k) => g[k])),
      );
      for (const idx of batches) {
        const first = requests[idx[0]];
        const gens = await generate(this.loaded.model, idx.map((i) => prompts[i].promptTokens), {
          maxNewTokens: first.maxTokens,
          temperature: first.temperature,
          seed: seed + idx[0],
          eosTokenIds: eos,
          adapter,
          onProgress: this.onProgress && ((p) => this.onProgress!(agentId, p)),
          signal: this.signal,
        });
        gens.forEach((g, j) => {
          const i = idx[j];
          // The end-of-turn token is part of the action (the policy chose to stop) but not of the text.
          out[i] = {
            ...prompts[i],
            tokens: g.tokens,
            logprobs: g.logprobs,
            text: tok.decode(g.tokens, { skipSpecialTokens: true }),
            truncated: g.finishReason === 'length',
          };
        });
      }
    }
    copyOf.forEach((first, i) => {
      if (first >= 0) out[i] = { ...out[first], tokens: [...out[first].tokens], logprobs: [...out[first].logprobs] };
    });
    return out;
  }
}
