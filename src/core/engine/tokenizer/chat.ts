/**
 * Chat templates: a model's Jinja `chat_template` + a list of messages -> the prompt text.
 *
 * For: rendering the template shipped in `tokenizer_config.json` (or `chat_template.jinja`) with
 * the variables Hugging Face `apply_chat_template` passes, so the prompt is byte-identical to HF's.
 * Not for: tokenizing the result (tokenizer.ts `encodeChat` does that) or tool calling.
 *
 *   renderChatTemplate(qwenTemplate, [{ role: 'user', content: 'Hi' }],
 *     { bos_token: null, eos_token: '<|im_end|>' }, { addGenerationPrompt: true })
 *   -> "<|im_start|>system\nYou are Qwen, ...<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
 *
 * Variables passed (as HF does): `messages`, `add_generation_prompt`, the named special tokens
 * the model has (`bos_token`, `eos_token`, `unk_token`, `pad_token`, `additional_special_tokens`),
 * plus the globals @huggingface/jinja defines itself (`raise_exception`, `strftime_now`, `range`).
 * `tools` and `date_string` are left undefined unless `extra` sets them; Llama 3.x templates then
 * write today's date via `strftime_now("%d %b %Y")`, so pass `extra: { date_string: '26 Jul 2024' }`
 * for a reproducible prompt.
 */

import { Template } from '@huggingface/jinja';

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant' | (string & {});
  content: string;
}

export interface ChatTemplateOptions {
  /**
   * Append the header that opens the assistant's turn (HF `add_generation_prompt`). Default true
   * (unlike HF's false): every caller here generates a reply, and forgetting it derails the model.
   */
  addGenerationPrompt?: boolean;
  /** More template variables (e.g. `date_string`, `tools`); they override the defaults above. */
  extra?: Record<string, unknown>;
}

/** The special tokens a template may print, by their HF names (null when the model has none). */
export interface TemplateSpecialTokens {
  bos_token: string | null;
  eos_token: string | null;
  unk_token?: string | null;
  pad_token?: string | null;
  additional_special_tokens?: string[];
}

export class ChatTemplateError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

/**
 * The template text from `tokenizer_config.json`'s `chat_template`, which is either a string or
 * (multi-template models) a list of `{name, template}`; like HF, the one named "default" is used.
 * Returns null when the model has no chat template.
 */
export function pickChatTemplate(raw: unknown): string | null {
  if (typeof raw === 'string') return raw;
  if (Array.isArray(raw)) {
    const named = raw.filter(
      (t): t is { name: string; template: string } =>
        typeof t === 'object' && t !== null && typeof t.name === 'string' && typeof t.template === 'string',
    );
    return (named.find((t) => t.name === 'default') ?? named[0])?.template ?? null;
  }
  return null;
}

/** Parsed templates, by text: a template is parsed once per process, not once per prompt. */
const parsedTemplates = new Map<string, Template>();

/**
 * Render `template` for `messages`. `where` names the model in error messages.
 * Throws ChatTemplateError when the template is missing, fails to parse, or raises while rendering.
 */
export function renderChatTemplate(
  template: string | null,
  messages: ChatMessage[],
  specialTokens: TemplateSpecialTokens,
  opts: ChatTemplateOptions = {},
  where = 'this model',
): string {
  if (template === null || template.trim() === '') {
    throw new ChatTemplateError(
      `${where} has no chat template: --chat needs a "chat_template" in tokenizer_config.json ` +
        `(or a chat_template.jinja file). Use a chat/instruct model, or prompt it without --chat.`,
    );
  }
  for (const [i, m] of messages.entries()) {
    if (typeof m?.role !== 'string' || typeof m?.content !== 'string') {
      throw new ChatTemplateError(`message ${i} must be {role: string, content: string}, got ${JSON.stringify(m)}`);
    }
  }
  let parsed = parsedTemplates.get(template);
  if (!parsed) {
    try {
      parsed = new Template(template);
    } catch (e) {
      throw new ChatTemplateError(`${where}: chat_template does not parse as Jinja: ${(e as Error).message}`);
    }
    parsedTemplates.set(template, parsed);
  }
  // Like HF, a special token the model lacks is left undefined (prints as '', `is defined` is false).
  const tokens = Object.fromEntries(Object.entries(specialTokens).filter(([, v]) => v !== null && v !== undefined));
  const variables: Record<string, unknown> = {
    ...tokens,
    // Fresh objects: templates may `set` on them and must not touch the caller's messages.
    messages: messages.map((m) => ({ ...m })),
    add_generation_prompt: opts.addGenerationPrompt ?? true,
    ...opts.extra,
  };
  try {
    return parsed.render(variables);
  } catch (e) {
    throw new ChatTemplateError(`${where}: chat_template failed while rendering: ${(e as Error).message}`);
  }
}
