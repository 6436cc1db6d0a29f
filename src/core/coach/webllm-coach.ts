/**
 * A coach served by WebLLM (@mlc-ai/web-llm): one of its prebuilt, pre-compiled chat models
 * scores every action with the same prompt and answer format as the engine's judge
 * (coach-format.ts), greedy, with one format-repair retry, neutral 5 when it still fails.
 *
 * For: the browser (worker or page) when a stronger judge than the shipped tiny one is wanted.
 * web-llm is imported lazily, so importing this module costs nothing until a coach is created.
 * Not for: Node, or training the coach (WebLLM models are frozen, compiled artefacts).
 *
 * Refuses clearly instead of failing deep inside WebLLM:
 *   - no WebGPU in this context                        -> WebLlmUnavailableError('no-webgpu')
 *   - the model needs a feature the adapter lacks      -> ('feature'), e.g. shader-f16 on SwiftShader
 *   - offline / download blocked                       -> ('download')
 * Example:
 *   const models = await webLlmModels();              // [{id: 'Qwen2.5-0.5B-Instruct-q4f32_1-MLC', vramMB: 944, ...}]
 *   const coach = await createWebLlmCoach('Qwen2.5-0.5B-Instruct-q4f32_1-MLC', {onProgress: (p) => bar(p.progress)});
 *   await coach.scoreBatch([ctx]);                    // [{score: 7, raw: 'PROCESS_SCORE: 7', ok: true, attempts: 1}]
 */
import { askWithRepair, type Coach, type CoachResult } from './coach.ts';
import { DEFAULT_COACH_TEMPLATE, type ActionContext } from './coach-format.ts';

export interface WebLlmModelInfo {
  id: string;
  vramMB: number | null;
  lowResource: boolean;
  requiredFeatures: string[];
}

class WebLlmUnavailableError extends Error {
  constructor(readonly reason: 'no-webgpu' | 'feature' | 'download' | 'unknown-model' | 'other', message: string) {
    super(message);
    this.name = 'WebLlmUnavailableError';
  }
}

/** web-llm's prebuilt chat models, smallest first (embedding models left out). */
export async function webLlmModels(): Promise<WebLlmModelInfo[]> {
  const { prebuiltAppConfig } = await import('@mlc-ai/web-llm');
  return prebuiltAppConfig.model_list
    .filter((m) => !m.model_type) // LLM only (0/undefined); embedding and VLM types are skipped
    .map((m) => ({
      id: m.model_id,
      vramMB: m.vram_required_MB ?? null,
      lowResource: Boolean(m.low_resource_required),
      requiredFeatures: m.required_features ?? (/(^|[-_])q\d?f16|f16_/.test(m.model_id) ? ['shader-f16'] : []),
    }))
    .sort((a, b) => (a.vramMB ?? 1e9) - (b.vramMB ?? 1e9));
}

export interface WebLlmCoachOptions {
  onProgress?: (p: { progress: number; text: string }) => void;
  template?: string;
  maxTokens?: number;
}

/** Load `modelId` in WebLLM and return a Coach; rejects with WebLlmUnavailableError naming why. */
export async function createWebLlmCoach(modelId: string, opts: WebLlmCoachOptions = {}): Promise<Coach> {
  const info = (await webLlmModels()).find((m) => m.id === modelId);
  if (!info) throw new WebLlmUnavailableError('unknown-model', `"${modelId}" is not one of web-llm's prebuilt models; pick one from the list`);
  const gpu = (globalThis.navigator as Navigator | undefined)?.gpu;
  const adapter = await gpu?.requestAdapter().catch(() => null);
  if (!adapter) {
    throw new WebLlmUnavailableError('no-webgpu', 'the WebLLM coach needs WebGPU and this browser has no adapter; use the shipped judge or the rule coach');
  }
  const missing = info.requiredFeatures.filter((f) => !adapter.features.has(f as GPUFeatureName));
  if (missing.length) {
    throw new WebLlmUnavailableError('feature',
      `${modelId} needs the WebGPU feature(s) ${missing.join(', ')}, which this adapter lacks; pick a q4f32 model, or use the shipped judge or the rule coach`);
  }
  const webllm = await import('@mlc-ai/web-llm');
  let engine: Awaited<ReturnType<typeof webllm.CreateMLCEngine>>;
  try {
    engine = await webllm.CreateMLCEngine(modelId, {
      initProgressCallback: (r) => opts.onProgress?.({ progress: r.progress, text: r.text }),
    });
  } catch (e) {
    const msg = (e as Error).message ?? String(e);
    const offline = /fetch|network|Failed to|NetworkError|load/i.test(msg);
    throw new WebLlmUnavailableError(offline ? 'download' : 'other',
      offline
        ? `the WebLLM model ${modelId} could not be downloaded (${msg}): you are offline or its host is blocked; use the shipped judge or the rule coach`
        : `WebLLM could not start ${modelId}: ${msg}`);
  }
  return new WebLlmCoach(modelId, engine, opts.template || DEFAULT_COACH_TEMPLATE, opts.maxTokens ?? 16);
}

interface ChatEngine {
  chat: {
    completions: {
      create(req: { messages: { role: 'user' | 'assistant'; content: string }[]; temperature: number; max_tokens: number }):
        Promise<{ choices: { message: { content: string | null } }[] }>;
    };
  };
}

export class WebLlmCoach implements Coach {
  readonly name: string;
  constructor(readonly modelId: string, private engine: unknown, readonly template: string, readonly maxTokens: number) {
    this.name = `webllm:${modelId}`;
  }

  private async ask(turns: string[]): Promise<string> {
    const reply = await (this.engine as ChatEngine).chat.completions.create({
      messages: turns.map((content, k) => ({ role: k % 2 === 0 ? 'user' : 'assistant', content })),
      temperature: 0,
      max_tokens: this.maxTokens,
    });
    return reply.choices[0]?.message.content ?? '';
  }

  /** One conversation at a time: the WebLLM engine answers one request at once. */
  scoreBatch(actions: ActionContext[]): Promise<CoachResult[]> {
    return askWithRepair(actions, this.template, async (conversations) => {
      const out: string[] = [];
      for (const turns of conversations) out.push(await this.ask(turns));
      return out;
    });
  }
}
