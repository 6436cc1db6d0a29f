/**
 * The Python source of the exported workflow (marti-workflow.ts puts the team's data between its two
 * parts). Our own implementation, in their workflow interface, of what the sandbox does:
 * - rollout.ts: each agent's system + user message from its templates, its turns (a follow-up with
 *   the tool output after each turn that ran code), its token budget, {{output:x}} / {{tool:x}};
 * - code-blocks.ts / sandbox.ts: the fenced blocks run, and the observation's text (output / stderr
 *   blocks, streams clipped to OUTPUT_LIMIT characters);
 * - rollout.ts extractFinalAnswer: the team's answer (the last \boxed{}, else "Answer:" / "Result:");
 * - rewards.ts agentReward: w x coach score / 10 + (1 - w) x outcome, w = workflow_args.reward_process_weight,
 *   the coach called once per agent on its whole work (coach-format.ts: input text, observation limit).
 * The answer is graded by their math grader, the coach is theirs (create_coach), the code runs on their
 * SandboxFusion tool. Evaluation (is_eval) calls no coach: outcome_score is the answer's correctness.
 *
 * For: marti-workflow.ts. Not for: anything TypeScript runs. No backticks and no "${" in the Python, so
 * that it can sit in template literals (a fence is chr(96) * 3 there).
 *
 * Example: WORKFLOW_PY.body.includes('async def workflow(') -> true
 */
import { OBSERVATION_LIMIT } from '../core/coach/coach-format.ts';
import { OUTPUT_LIMIT } from '../core/tools/sandbox.ts';

/** What mathchat_processor.py divides every agent_reward by (it expects the coach's 0-10 scale). */
export const REWARD_SCALE = 10;

const imports = String.raw`
import asyncio
import copy
import re
`;

const body = String.raw`
CODE_TOOL = "code_interpreter"  # tools_config.tools.<name> in the exported config
OUTPUT_LIMIT = ${OUTPUT_LIMIT}  # characters kept per stream of a code run (the sandbox's)
COACH_OBSERVATION_LIMIT = ${OBSERVATION_LIMIT}  # characters of tool output the coach sees (the sandbox's)
REWARD_SCALE = ${REWARD_SCALE}  # mathchat_processor.py divides agent_reward by 10
FENCE = chr(96) * 3

# ---- prompts: the sandbox's renderTemplate and promptVars -------------------------------------

PLACEHOLDER = re.compile(r"\{\{([A-Za-z0-9_:-]+)\}\}")


def render(template, values):
    """Fill {{name}} placeholders; an unknown one is an error naming it.
    Example: render("Problem: {{problem}}", {"problem": "2+3?"}) -> "Problem: 2+3?"
    """
    def fill(match):
        name = match.group(1)
        if name not in values:
            raise KeyError("template placeholder {{%s}} has no value (known: %s)" % (name, ", ".join(values)))
        return str(values[name])
    return PLACEHOLDER.sub(fill, template)


def prompt_values(index, problem, outputs, last_tool):
    """The values agent index's templates read: its place in the team, the problem, earlier agents' work."""
    agents = TEAM["agents"]
    values = {
        "position": index + 1, "count": len(agents), "team": " -> ".join(a["role"] for a in agents),
        "budget": agents[index]["max_tokens"], "role": agents[index]["role"], "problem": problem, "part": "(none)",
    }
    for a in agents:
        values["output:" + a["id"]] = outputs.get(a["id"], "(none)")
        values["tool:" + a["id"]] = last_tool.get(a["id"], "(none)")
    return values


def first_messages(index, problem, outputs=None, last_tool=None):
    """Agent index's first chat messages (system, user), as the sandbox builds them.
    Example: first_messages(0, "2+3?")[1] -> {"role": "user", "content": "Problem: 2+3?"}
    """
    spec = TEAM["agents"][index]
    values = prompt_values(index, problem, outputs or {}, last_tool or {})
    return [{"role": "system", "content": render(spec["system"], values)},
            {"role": "user", "content": render(spec["user"], values)}]


# ---- code: the sandbox's extractCodeBlocks and formatObservation ------------------------------

FENCE_OPEN = re.compile(r"^\s{0,3}(\x60{3,})\s*([A-Za-z0-9_+-]*)[^\x60]*$")
ONLY_TICKS = re.compile(r"^\x60+$")
LANGUAGE_TAGS = {"": "python", "python": "python", "python3": "python", "py": "python", "js": "javascript",
                 "javascript": "javascript", "node": "javascript", "sql": "sql", "duckdb": "sql"}


def code_blocks(text, languages):
    """The fenced blocks of text in languages (a bare fence is Python; an unclosed last one still counts)."""
    blocks, fence, tag, body = [], None, "", []
    for line in text.replace("\r\n", "\n").split("\n"):
        if fence is None:
            match = FENCE_OPEN.match(line)
            if match:
                fence, tag, body = match.group(1), match.group(2).lower(), []
            continue
        stripped = line.strip()
        if stripped.startswith(fence) and ONLY_TICKS.match(stripped):
            if LANGUAGE_TAGS.get(tag) in languages:
                blocks.append("\n".join(body))
            fence = None
        else:
            body.append(line)
    if fence is not None and LANGUAGE_TAGS.get(tag) in languages and any(l.strip() for l in body):
        blocks.append("\n".join(body))
    return blocks


def clip(text, limit=OUTPUT_LIMIT):
    """The first and last limit/2 characters of a long stream, with what was dropped in between."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return "%s\n... [truncated %d chars]\n%s" % (text[:half], len(text) - limit, text[-(limit - half):])


def observation_text(meta):
    """One run's observation from the tool's metadata (SandboxFusion: run_status, stdout, stderr)."""
    def stream(name):
        text = clip(str(meta.get(name) or ""))
        return text[:-1] if text.endswith("\n") else text
    parts = []
    if stream("stdout"):
        parts.append(FENCE + "output\n" + stream("stdout") + "\n" + FENCE)
    if stream("stderr"):
        parts.append(FENCE + "stderr\n" + stream("stderr") + "\n" + FENCE)
    status = meta.get("run_status")
    if status not in (None, "Finished"):
        parts.append(str(meta.get("exception") or "Execution %s (return code %s)" % (status, meta.get("return_code"))))
    return "\n".join(parts) if parts else FENCE + "output\n(no output)\n" + FENCE


async def run_code(tool_manager, spec, text, metadata):
    """Runs the turn's blocks one after another; their observations joined, or None when it ran none."""
    languages = [t for t in spec["tools"] if t in RUN_LANGUAGES]
    blocks = code_blocks(text, languages) if languages else []
    if not blocks:
        return None
    if tool_manager is None:
        raise ValueError("agent %s writes code but the run has no tool manager: keep tools_config.tools.%s" % (spec["id"], CODE_TOOL))
    observations = []
    for code in blocks:
        try:
            _, meta = await tool_manager.execute_tool(CODE_TOOL, {"code": code}, metadata=metadata)
        except Exception as error:  # the tool failed, not the agent: the agent sees why, as in the sandbox
            meta = {"run_status": "Error", "exception": "%s: %s" % (type(error).__name__, error)}
        observations.append(observation_text(meta if isinstance(meta, dict) else {}))
    return "\n".join(observations)


# ---- generation --------------------------------------------------------------------------------

def sampling_params(agent, spec):
    """The engine's sampling parameters with this agent's token budget and no minimum length."""
    params = agent["sampling_params"]
    params = params.clone() if hasattr(params, "clone") else copy.deepcopy(params)
    params.max_tokens = spec["max_tokens"]
    params.min_tokens = 0
    return params


def visible_text(raw, tokenizer):
    """The reply without special tokens (the sandbox decodes with skip_special_tokens); training keeps raw."""
    for token in getattr(tokenizer, "all_special_tokens", None) or [getattr(tokenizer, "eos_token", None)]:
        if token:
            raw = raw.replace(token, "")
    return raw


# ---- the team's answer and the rewards ---------------------------------------------------------

BOX_COMMANDS = ("\\boxed", "\\fbox", "\\framebox")
ANSWER_LINE = re.compile(r"(?:Answer|Result)\s*:\s*\$?(-?[0-9.,/]+)", re.IGNORECASE)


def extract_boxed(text):
    """The content of the last \\boxed{...} (or \\fbox, \\framebox; nested braces), or of "\\boxed 5"; else None."""
    start, command = -1, ""
    for cmd in BOX_COMMANDS:
        before = len(text)
        while before >= 0:
            at = text.rfind(cmd, 0, before + len(cmd))
            if at < 0:
                break
            after = text[at + len(cmd):at + len(cmd) + 1]
            if not re.match(r"[A-Za-z]", after):
                if at > start:
                    start, command = at, cmd
                break
            before = at - 1
    if start < 0:
        return None
    i = start + len(command)
    while text[i:i + 1] == " ":
        i += 1
    if text[i:i + 1] != "{":
        bare = re.match(r"[^\s$]+", text[i:])
        return bare.group(0) if bare else None
    depth, j = 0, i
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1:j]
        j += 1
    return None


def final_answer(text):
    """The team's answer in the final agent's text: the last \\boxed{}, else "Answer: x" / "Result: x"."""
    boxed = extract_boxed(text)
    if boxed is not None:
        return boxed
    match = ANSWER_LINE.search(text)
    return match.group(1) if match else None


def is_correct(answer, label):
    """Graded by the trainer's math grader (1.0 right, 0.0 wrong, -1.0 timed out)."""
    if answer is None:
        return False
    from marti.verifiers.qwen.qwen_eval_timeout import qwen_reward_fn_timeout
    return qwen_reward_fn_timeout("\\boxed{" + answer + "}", str(label)) > 0


def action_reward(process_weight, score, correct):
    """The sandbox's reward of an agent's actions, 0-1. Example: action_reward(1.0, 7.0, False) -> 0.7."""
    return process_weight * (score / 10.0) + (1.0 - process_weight) * (1.0 if correct else 0.0)


_COACH = None


def get_coach(args):
    """The trainer's coach (create_coach), made once per worker from workflow_args."""
    global _COACH
    if _COACH is None:
        from marti.verifiers.coach import create_coach
        _COACH = create_coach(
            model=args.get("coach_model", "gemini-2.5-flash"), coach_type=args.get("coach_type", "simple"), temperature=0.0,
            max_output_tokens=args.get("coach_max_output_tokens"), thinking_budget=args.get("coach_thinking_budget"),
            use_vertex_ai=args.get("use_vertex_ai", False), vertex_project=args.get("vertex_project"),
            vertex_location=args.get("vertex_location", "global"), prompt_template=args["coach_prompt_template"])
    return _COACH


async def coach_scores(args, problem, label, work):
    """One coach call per agent on its whole work (input, its turns' texts, its tool output), all at once."""
    coach = get_coach(args)

    def observation(w):
        text = "\n".join(w["observations"])
        return text[:COACH_OBSERVATION_LIMIT] if text.strip() else "(none)"

    feedbacks = await asyncio.gather(*[coach.evaluate(
        problem=problem, agent_input="\n\n".join(m["content"] for m in w["actions"][0]["messages"]),
        agent_output="\n".join(w["texts"]), agent_role=w["spec"]["role"], context={"tool_observation": observation(w)},
        ground_truth=str(label) if w["spec"]["final"] and args.get("enable_ground_truth_eval", False) else None,
    ) for w in work])
    return [float(f.reward) for f in feedbacks]


# ---- the workflow --------------------------------------------------------------------------------

async def play_agent(index, agent, prompt, outputs, last_tool, tool_manager, metadata):
    """One agent's turns: its messages, a generation per turn, code run, a follow-up after code."""
    spec = TEAM["agents"][index]
    messages = first_messages(index, prompt, outputs, last_tool)
    done = {"spec": spec, "index": index, "actions": [], "texts": [], "observations": []}
    for turn in range(1, spec["turns"] + 1):
        agent_input = agent["tokenizer"].apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        response = await agent["llm"].generate_async.remote(agent_input, sampling_params(agent, spec))
        raw = response.outputs[0].text
        text = visible_text(raw, agent["tokenizer"])
        observation = await run_code(tool_manager, spec, text, metadata)
        done["actions"].append({"turn": turn, "messages": messages, "agent_input": agent_input, "agent_output": raw,
                                "text": text, "observation": observation})
        done["texts"].append(text)
        if observation is None:
            break
        done["observations"].append(observation)
        last_tool[spec["id"]] = observation
        if turn == spec["turns"] or not spec["follow_up"]:
            break
        values = dict(prompt_values(index, prompt, outputs, last_tool), observation=observation)
        messages = messages + [{"role": "assistant", "content": text}, {"role": "user", "content": render(spec["follow_up"], values)}]
    outputs[spec["id"]] = "\n".join(done["texts"])
    return done


async def workflow(prompt, label, agents, tool_manager, task, metadata=None, **kwargs):
    """The team on one problem: every action with its input, output and reward (x REWARD_SCALE)."""
    args = kwargs.get("workflow_args") or {}
    if len(agents) != len(TEAM["agents"]):
        raise ValueError("the workflow's team has %d agents and the config's agents list %d: keep them the same"
                         % (len(TEAM["agents"]), len(agents)))
    outputs, last_tool, work = {}, {}, []
    for index, agent in enumerate(agents):
        work.append(await play_agent(index, agent, prompt, outputs, last_tool, tool_manager, metadata))
    final = next(w for w in work if w["spec"]["final"])
    correct = is_correct(final_answer(outputs[final["spec"]["id"]]), label)
    weight = float(args.get("reward_process_weight", 1.0))
    coached = weight > 0 and not kwargs.get("is_eval", False)
    scores = await coach_scores(args, prompt, label, work) if coached else [None] * len(work)
    trajectory = []
    for w, score in zip(work, scores):
        reward = action_reward(weight, score or 0.0, correct)
        for a in w["actions"]:
            trajectory.append({
                "turn_id": len(trajectory), "agent_index": w["index"], "agent_name": agents[w["index"]]["agent_id"],
                "agent_role": agents[w["index"]]["agent_role"], "agent_input": a["agent_input"], "agent_output": a["agent_output"],
                "agent_reward": REWARD_SCALE * reward,
                "metadata": {"agent": w["spec"]["id"], "turn": a["turn"], "messages": a["messages"],
                             "observation": a["observation"], "coach_score": score},
            })
    outcome = 1.0 if correct else 0.0
    return {"prompt": prompt, "label": label, "trajectory": trajectory, "final_reward": outcome, "outcome_score": outcome}
`;

/** The source around the team's data: imports before it, the code after. */
export const WORKFLOW_PY = { imports, body };
