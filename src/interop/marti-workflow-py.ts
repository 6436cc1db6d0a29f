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
 * - answers.ts answersEqual: the team's answer graded as the sandbox grades it (ported: their grader needs
 *   func_timeout, which neither their requirements nor MARTI's list).
 * The coach is theirs (create_coach), the code runs on their SandboxFusion tool. Evaluation (is_eval) calls no coach:
 * outcome_score is the answer's correctness.
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
from fractions import Fraction
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
    """The engine's sampling parameters with this agent's token budget and a minimum of 1 token."""
    params = agent["sampling_params"]
    params = params.clone() if hasattr(params, "clone") else copy.deepcopy(params)
    params.max_tokens = spec["max_tokens"]
    # At least 1 token before the stop token: their packing asserts that every trained output has more than
    # one token (multi_agent_world_async.py prepare_samples, "assert output_len > 1"), and a reply that is only
    # the stop token has one. Their engines' default, 16, would forbid the sandbox's short replies.
    params.min_tokens = 1
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


# The sandbox's answersEqual (src/core/tasks/answers.ts): both answers normalised, numbers compared as
# exact fractions ("\frac{1}{2}" == "0.5", "0.333" != "\frac{1}{3}"), no symbolic algebra.
UNIT_WORDS = set((
    "dollars dollar cents cent degrees degree units unit inches inch feet foot ft cm mm m km meters meter "
    "miles mile mph hours hour minutes minute seconds second days day weeks week years year kg g grams "
    "gram pounds pound lbs liters liter ml percent points point people students apples items sq square").split())


def parse_decimal(text):
    """"-12", "27.0", ".35625" as a Fraction; anything else None."""
    m = re.fullmatch(r"([+-]?)([0-9]*)(?:\.([0-9]*))?", text)
    if not m or (m.group(2) == "" and not m.group(3)):
        return None
    value = Fraction(int((m.group(2) or "0") + (m.group(3) or "")), 10 ** len(m.group(3) or ""))
    return -value if m.group(1) == "-" else value


def parse_rational(text):
    r"""A plain number: decimal, "a/b" or the mixed "1+4/5" the clean-up makes of "1\frac{4}{5}"; else None."""
    simple = parse_decimal(text)
    if simple is not None:
        return simple
    frac = re.fullmatch(r"([+-]?)([0-9]+(?:\.[0-9]+)?)/([0-9]+(?:\.[0-9]+)?)", text)
    if frac:
        a, b = parse_decimal(frac.group(2)), parse_decimal(frac.group(3))
        if a is None or b is None or b == 0:
            return None
        return -(a / b) if frac.group(1) == "-" else a / b
    mixed = re.fullmatch(r"([+-]?)([0-9]+)\+([0-9]+)/([0-9]+)", text)
    if mixed:
        whole, num, den = int(mixed.group(2)), int(mixed.group(3)), int(mixed.group(4))
        if den == 0 or num >= den:
            return None
        value = Fraction(whole * den + num, den)
        return -value if mixed.group(1) == "-" else value
    return None


def rational_text(r):
    return str(r.numerator) if r.denominator == 1 else "%d/%d" % (r.numerator, r.denominator)


def rewrite_fractions(s):
    r"""\frac{a}{b}, \frac ab: " a/b" for plain integers, else \frac{a}{b} with the braces normalised."""
    arg = r"(\{(?:[^{}]|\{[^{}]*\})*\}|[0-9a-zA-Z])"
    pattern = re.compile(r"\\frac\s*" + arg + r"\s*" + arg)

    def fill(m):
        na, nb = [(x[1:-1] if x.startswith("{") else x).strip() for x in (m.group(1), m.group(2))]
        if re.fullmatch(r"[0-9]+", na) and re.fullmatch(r"[0-9]+", nb):
            return " %s/%s" % (na, nb)
        return "\\frac{%s}{%s}" % (na, nb)
    previous = None
    while previous != s:
        previous, s = s, pattern.sub(fill, s)
    return s


def split_top_level(s):
    """"(a,b,c)" or "a,b" split on commas outside brackets, the outer brackets kept on the first and last pieces."""
    if not s:
        return [s]
    opening, closing = s[0], s[-1]
    wrapped = opening in "([{" and closing in ")]}"
    body = s[1:-1] if wrapped else s
    parts, depth, current = [], 0, ""
    for ch in body:
        if ch in "([{":
            depth += 1
        if ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
        if depth < 0:
            return [s]
    parts.append(current)
    if len(parts) == 1:
        return [s]
    if not wrapped:
        return parts
    out = []
    for i, p in enumerate(parts):
        r = parse_rational(p)
        value = rational_text(r) if r is not None else p
        out.append(opening + value if i == 0 else value + closing if i == len(parts) - 1 else value)
    return out


def normalize_answer(answer):
    """The canonical string of an answer. Example: normalize_answer("\\left( \\frac{3}{2}, -13 \\right)") -> "(3/2,-13)"."""
    s = answer.strip()
    s = re.sub("[\u2212\u2013]", "-", s).replace("\u00b0", "^\\circ").replace("\u00a0", " ")
    s = re.sub(r"^\\\(|\\\)\Z", "", s)
    s = re.sub(r"^\\\[|\\\]\Z", "", s)
    s = re.sub(r"^\$+|\$+\Z", "", s)
    s = re.sub(r"\.\s*\Z", "", s)
    s = s.replace("\\\\", ";")
    s = re.sub(r"\\[!,;:]|\\ |~", " ", s)
    s = re.sub(r"\\(?:left|right|big|Big|bigg|Bigg)(?![a-zA-Z])", "", s)
    s = s.replace("\\displaystyle", "")
    s = re.sub(r"\\[dt]frac", lambda m: "\\frac", s)
    s = re.sub(r"\^\s*\{?\s*\\circ\s*\}?", "", s).replace("\\circ", "")
    s = re.sub(r"\\%|%", "", s)
    s = re.sub(r"\\\$|\$", "", s)
    before = s
    s = re.sub(r"\\(?:text|textbf|textrm|mathrm|mbox|operatorname)\s*\{([^{}]*)\}(?:\s*\^\s*\{?[23]\}?)?",
               lambda m: " " if m.start() > 0 and re.search(r"[0-9}]\s*\Z", before[:m.start()]) else m.group(1), s)
    s = re.sub(r"^(.*?[0-9}])\s+([a-zA-Z]+(?:\s+[a-zA-Z]+)?)\s*(?:\^\s*\{?[23]\}?)?\s*\Z",
               lambda m: m.group(1) if all(w.lower() in UNIT_WORDS for w in m.group(2).split()) else m.group(0), s)
    s = re.sub(r"^\s*[a-zA-Z]\s*=(?!=)\s*", "", s)
    s = re.sub(r"\\sqrt\s*([0-9a-zA-Z])", lambda m: "\\sqrt{%s}" % m.group(1), s)
    s = rewrite_fractions(s)
    s = re.sub(r"^\s*([+-]?[0-9]+)\s+([0-9]+/[0-9]+)\s*\Z", lambda m: m.group(1) + "+" + m.group(2), s)
    s = re.sub(r"\s+", "", s)
    if re.fullmatch(r"[+-]?[0-9]{1,3}(,[0-9]{3})+(\.[0-9]+)?", s):
        s = s.replace(",", "")
    s = re.sub(r"^\(([A-E])\)\Z", lambda m: m.group(1), s)
    number = parse_rational(s)
    if number is not None:
        return rational_text(number)
    parts = split_top_level(s)
    if len(parts) > 1:
        return ",".join(rational_text(parse_rational(p)) if parse_rational(p) is not None else p for p in parts)
    if re.fullmatch(r"[a-zA-Z]+", s):
        return s.lower()
    return s


def answers_equal(a, b):
    """The sandbox's answersEqual. Example: answers_equal("\\frac{1}{2}", "0.5") -> True; answers_equal("-3", "3") -> False."""
    if a is None or b is None:
        return False
    na, nb = normalize_answer(str(a)), normalize_answer(str(b))
    return na != "" and na == nb


def is_correct(answer, label):
    """The team's answer right, as the sandbox grades it (src/core/loop/rollout.ts: finalAnswer !== null and answersEqual)."""
    return answer is not None and answers_equal(answer, label)


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
