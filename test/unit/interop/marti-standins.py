"""
Stand-ins for the MAPPA authors' trainer, to run the MARTI export's Python files without it: their
engines (vLLM's generate_async and SamplingParams), a ChatML tokenizer, the SandboxFusion code tool, the
coach, their save_logs without a logger, and torch's TensorBoard writer (the workflow grades answers itself).
Each follows the interface the fixture (test/fixtures/marti/multiagent-coaching-ed66921.json) records; none is
their code. Their code itself runs in scripts/marti-dry-run.sh.

For: test/unit/interop/marti-run.test.ts, which writes a job as JSON on stdin and reads JSON on stdout.
Not for: anything else.

Example: echo '{"kind": "launcher", "launcher": "mappa_train.py", "eval_logs": {"eval/reward": 0.5}, "logs": {"a": 1}}' | python3 marti-standins.py
         -> {"writers": 1, "scalars": [["eval/reward", 0.5, 0], ["train/a", 1, 1]], "refused": null, ...}
"""
import asyncio
import importlib.util
import json
import re
import sys
import types


def load(path, name):
    """A file as a module, the way their wrapper loads workflow_func_path."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Tokenizer:
    """ChatML, as the shipped agent's chat template writes it."""
    eos_token = "<|im_end|>"
    all_special_tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        text = "".join("<|im_start|>%s\n%s<|im_end|>\n" % (m["role"], m["content"]) for m in messages)
        return text + ("<|im_start|>assistant\n" if add_generation_prompt else "")


class SamplingParams:
    """vLLM's, as their get_rank_agent makes it (max_tokens generate_max_len, min_tokens 16)."""
    def __init__(self, max_tokens):
        self.max_tokens, self.min_tokens = max_tokens, 16

    def clone(self):
        copy = SamplingParams(self.max_tokens)
        copy.__dict__.update(self.__dict__)
        return copy


class Engine:
    """llm.generate_async.remote(prompt, params) -> an object with .outputs[0].text, the stop text kept."""
    def __init__(self, replies, seen, agent_id):
        self.replies, self.seen, self.agent_id = replies, seen, agent_id
        self.generate_async = self

    async def remote(self, prompt, params):
        self.seen.append({"agent": self.agent_id, "prompt": prompt, "max_tokens": params.max_tokens, "min_tokens": params.min_tokens})
        text = self.replies.pop(0) + Tokenizer.eos_token
        return types.SimpleNamespace(outputs=[types.SimpleNamespace(text=text)])


class ToolManager:
    """execute_tool("code_interpreter", {"code": ...}) -> (text, SandboxFusion's metadata)."""
    def __init__(self, stdout, calls):
        self.stdout, self.calls = stdout, calls

    async def execute_tool(self, name, parameters, **kwargs):
        self.calls.append({"tool": name, "code": parameters["code"]})
        return self.stdout, {"run_status": "Finished", "stdout": self.stdout, "stderr": "", "return_code": 0}


class Coach:
    """evaluate(problem, agent_input, agent_output, agent_role, context, ground_truth) -> .reward 0-10."""
    def __init__(self, scores, calls):
        self.scores, self.calls = scores, calls

    async def evaluate(self, problem, agent_input, agent_output, agent_role, context=None, ground_truth=None):
        self.calls.append({"role": agent_role, "input": agent_input, "output": agent_output, "context": context, "ground_truth": ground_truth})
        return types.SimpleNamespace(reward=float(self.scores[agent_role]), outcome_score=None)


def install_marti(coach):
    """marti.verifiers.coach.create_coach, as a module (the workflow grades answers itself)."""
    made = {"created": []}

    def create_coach(model, coach_type="simple", **kwargs):
        made["created"].append({"model": model, "coach_type": coach_type, **{k: v for k, v in kwargs.items() if k != "prompt_template"}})
        return coach
    for name in ["marti", "marti.verifiers"]:
        sys.modules[name] = types.ModuleType(name)
    sys.modules["marti.verifiers.coach"] = types.SimpleNamespace(create_coach=create_coach)
    return made


def run_workflow(job):
    """The shipped workflow on one problem, called with the keyword arguments their wrapper passes."""
    seen, tools, coached = [], [], []
    made = install_marti(Coach(job.get("scores", {}), coached))
    module = load(job["workflow"], "workflow")
    agents = [{"llm": Engine(list(replies), seen, "agent_%d" % i), "sampling_params": SamplingParams(job["generate_max_len"]),
               "agent_id": "agent_%d" % i, "agent_role": role, "tokenizer": Tokenizer(), "is_reasoning_model": False}
              for i, (role, replies) in enumerate(zip(job["roles"], job["replies"]))]
    values = {"prompt": job["problem"], "label": job["label"], "agents": agents, "tool_manager": ToolManager(job["stdout"], tools),
              "task": "math", "metadata": {}, "workflow_args": job["workflow_args"], "max_length": 2048, "prompt_id": 0,
              "is_eval": job["is_eval"]}
    result = asyncio.run(module.workflow(**{k: values[k] for k in job["kwargs"]}))
    return {"result": result, "generations": seen, "tools": tools, "coach": coached, "created": made["created"]}


class TensorBoardWriter:
    """torch's SummaryWriter: add_scalar takes a number (a dict, list or None raises, as torch's make_np does); flush, close."""
    def __init__(self, log_dir=None):
        self.log_dir, self.logged = log_dir, []

    def add_scalar(self, tag, scalar_value, global_step=None):
        if isinstance(scalar_value, bool) or not isinstance(scalar_value, (int, float)):
            raise NotImplementedError("Got %s, but numpy array or torch tensor are expected." % type(scalar_value))
        self.logged.append([tag, scalar_value, global_step])

    def flush(self):
        pass

    def close(self):
        pass


class Controller:
    """Their BaseController.save_logs with no logger configured (the exported config): it writes nothing."""
    def save_logs(self, args, global_step, logs_dict, perf_stats):
        pass


def run_launcher(job):
    """Two save_logs calls (step 0's evaluation, a step's logs) through the launcher's wrapper; what its writer got."""
    module = load(job["launcher"], "mappa_train")
    writers = []

    def factory(log_dir):
        writers.append(TensorBoardWriter(log_dir))
        return writers[-1]
    module.install(Controller, factory)
    args = types.SimpleNamespace(logging_steps=1)
    Controller().save_logs(args, 0, job["eval_logs"], None)
    Controller().save_logs(args, 1, job["logs"], job.get("perf"))
    refused = None
    try:
        module.check_args(job.get("argv", []))
    except SystemExit as e:
        refused = str(e)
    return {"writers": len(writers), "log_dir": writers[0].log_dir, "scalars": writers[0].logged, "refused": refused}


def run_answers(job):
    """The workflow's answers_equal on each pair."""
    module = load(job["workflow"], "workflow")
    return {"equal": [module.answers_equal(a, b) for a, b in job["pairs"]]}


if __name__ == "__main__":
    request = json.load(sys.stdin)
    out = {"workflow": run_workflow, "launcher": run_launcher, "answers": run_answers}[request["kind"]](request)
    json.dump(out, sys.stdout)
