"""
A dry run of a MARTI export through the MAPPA authors' own trainer code (ltjed/multiagent-coaching):
their unmodified train.py entry, started through the export's launcher, with Hydra composing the
exported config, their MultiAgentController building the agents, the step-0 evaluation, and rollout
steps 1 and 2 with their workflow wrapper, processor, sample filter, packing, experience maker,
REINFORCE++ advantages, replay buffer and PPO loop.

Stood in for, because they need GPUs, a cluster or the network (each one named in the log):
- vLLM generation: DryEngine answers each agent from a script (right or wrong answers, code or not,
  an empty reply where min_tokens allows one, as vLLM does);
- the torch update: the policy and reference forward passes (fixed log-probs), DryPPOTrainer's
  training_step (no gradient), checkpoints;
- Ray placement: a one-process `ray` (actors are objects, remote calls run in place);
- packages not installable here and only imported on these paths: HF transformers (a tokenizer that
  renders the model's own chat template), HF datasets (JSON files in memory), DeepSpeed, PEFT, MCP;
- the hosted coach's HTTP call (a score from the script; their prompt building and score parsing run);
- SandboxFusion: a local HTTP server in its API that runs the code with python3.
torch itself is Debian's 1.13, run for real (on the CPU).

Usage (scripts/marti-dry-run.sh prepares everything and calls this in the prepared checkout):
    python3 marti-dry-run.py --mode process [--put-back filter|tensorboard|grader|min-tokens] -- [Hydra overrides]
Example: python3 marti-dry-run.py --mode process -- default_agent.max_samples=24
         -> "[dry-run] step 1: generated {solver: 24, executor: 37, verifier: 24}, trained the same" ... "[dry-run] PASS"
"""
import argparse
import asyncio
import glob
import hashlib
import http.server
import importlib
import importlib.abc
import importlib.machinery
import json
import os
import re
import subprocess
import sys
import threading
import types

LOG = []


def say(line):
    print("[dry-run] " + line, flush=True)
    LOG.append(line)


def fail(line):
    say("FAIL " + line)
    sys.exit(1)


# ---- Ray placement: a one-process ray ---------------------------------------------------------------

class Ref:
    """An ObjectRef: a value, or a coroutine awaited when it is needed."""
    def __init__(self, value=None, coro=None):
        self._value, self._coro = value, coro

    def result(self):
        if self._coro is not None:
            self._value, self._coro = LOOP.run_until_complete(self._coro), None
        return self._value

    def __await__(self):
        if self._coro is not None:
            self._value, self._coro = (yield from self._coro.__await__()), None
        return self._value


LOOP = asyncio.new_event_loop()
NAMED = {}


def resolve(x):
    return x.result() if isinstance(x, Ref) else x


class Method:
    def __init__(self, bound):
        self.bound = bound

    def remote(self, *args, **kwargs):
        out = self.bound(*[resolve(a) for a in args], **{k: resolve(v) for k, v in kwargs.items()})
        return Ref(coro=out) if asyncio.iscoroutine(out) else Ref(out)

    def options(self, **_):
        return self


class Handle:
    """An actor handle: handle.method.remote(...) calls the object's method in place."""
    def __init__(self, obj):
        self._obj = obj

    def __getattr__(self, name):
        return Method(getattr(self._obj, name))


class ActorClass:
    def __init__(self, cls, opts=None):
        self._cls, self._opts = cls, opts or {}

    def options(self, **opts):
        return ActorClass(self._cls, opts)

    def remote(self, *args, **kwargs):
        name = self._opts.get("name")
        if name and self._opts.get("get_if_exists") and name in NAMED:
            return NAMED[name]
        obj = self._cls.__new__(self._cls)
        init = self._cls.__init__(obj, *[resolve(a) for a in args], **{k: resolve(v) for k, v in kwargs.items()})
        if asyncio.iscoroutine(init):
            LOOP.run_until_complete(init)
        handle = Handle(obj)
        if name:
            NAMED[name] = handle
        return handle

    def __call__(self, *args, **kwargs):  # the undecorated class, as ray allows through __ray_actor_class__
        return self._cls(*args, **kwargs)


class RemoteFunction:
    def __init__(self, fn):
        self._fn = fn

    def options(self, **_):
        return self

    def remote(self, *args, **kwargs):
        return Method(self._fn).remote(*args, **kwargs)

    def __get__(self, obj, owner):  # @ray.remote on a method: self._init_agent_async.remote(self, ...)
        return self


def ray_remote(*args, **kwargs):
    def wrap(target):
        return ActorClass(target) if isinstance(target, type) else RemoteFunction(target)
    if len(args) == 1 and not kwargs and callable(args[0]):
        return wrap(args[0])
    return wrap


def ray_get(refs, timeout=None):
    return [resolve(r) for r in refs] if isinstance(refs, list) else resolve(refs)


class PlacementGroup:
    def __init__(self, bundles, strategy="PACK", **_):
        self.bundle_specs = bundles

    def ready(self):
        return Ref(True)


def make_ray():
    ray = types.ModuleType("ray")
    ray.__path__ = []
    ray.remote, ray.get, ray.put = ray_remote, ray_get, Ref
    ray.method = lambda **_: (lambda f: f)
    ray.init = ray.shutdown = lambda *a, **k: None
    ray.is_initialized = lambda: True
    ray.wait = lambda refs, **k: (refs, [])
    ray.ObjectRef = Ref
    util = types.ModuleType("ray.util")
    util.__path__ = []
    pg = types.ModuleType("ray.util.placement_group")
    pg.placement_group, pg.PlacementGroup = PlacementGroup, PlacementGroup
    pg.remove_placement_group = lambda *a, **k: None
    sched = types.ModuleType("ray.util.scheduling_strategies")
    sched.PlacementGroupSchedulingStrategy = lambda **k: k
    sched.NodeAffinitySchedulingStrategy = lambda **k: k
    private = types.ModuleType("ray._private")
    private.__path__ = []
    services = types.ModuleType("ray._private.services")
    services.get_node_ip_address = lambda: "127.0.0.1"
    private.services = services
    actor = types.ModuleType("ray.actor")
    actor.ActorHandle = Handle
    mp = types.ModuleType("ray.util.multiprocessing")
    ray.util, ray._private, ray.actor = util, private, actor
    util.placement_group, util.scheduling_strategies, util.multiprocessing = pg, sched, mp
    for m in (ray, util, pg, sched, private, services, actor, mp):
        sys.modules[m.__name__] = m


# ---- packages that are not installable here: absent (a call raises), or a small stand-in ----------

class Absent:
    """Stands for a name of a package not installed here; using it raises, naming it."""
    def __init__(self, *args, **kwargs):
        raise RuntimeError("dry run: %s is not available here and was called" % type(self).__qualname__)


class AbsentModule(types.ModuleType):
    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        cls = type(attr, (Absent,), {"__qualname__": self.__name__ + "." + attr})
        setattr(self, attr, cls)
        return cls


class AbsentFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves AbsentModule for these packages and their submodules (only imported on the paths the run takes)."""
    def __init__(self, roots):
        self.roots = roots

    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in self.roots and name not in sys.modules:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        module = AbsentModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        pass


# Every third-party package their marti/ imports that Debian does not have (transformers, datasets and vllm get
# the stand-ins below on top); ray is the one-process ray above. weave stays uninstalled (their code imports it in a try),
# and so does func_timeout: their grader needs it, and neither their requirements nor MARTI's list it.
ABSENT = ["IPython", "aiohttp", "anthropic", "autogen_agentchat", "autogen_core", "autogen_ext", "class_registry", "datasets",
          "deepspeed", "fire", "flash_attn", "interfering", "joblib", "latex2sympy2", "matplotlib", "mcp", "openai",
          "pandas", "peft", "pynvml", "pytest", "ring_flash_attn", "shortuuid", "sklearn", "timeout_decorator", "transformers",
          "treequest", "vllm", "wandb", "word2number", "bitsandbytes"]


class SamplingParams:
    """vllm.SamplingParams as their world builds it (the fields they set)."""
    def __init__(self, **kwargs):
        self.__dict__.update({"temperature": 1.0, "top_p": 1.0, "top_k": -1, "max_tokens": 16, "min_tokens": 0}, **kwargs)

    def clone(self):
        return SamplingParams(**self.__dict__)


class Tokenizer:
    """transformers' tokenizer, standing in: the model's own chat template (tokenizer_config.json) rendered
    with jinja2 as transformers does, special tokens at their ids, other text split into words and marks."""
    def __init__(self, folder):
        import jinja2
        config = json.load(open(os.path.join(folder, "tokenizer_config.json")))
        self.special = {v["content"]: int(k) for k, v in config.get("added_tokens_decoder", {}).items()}
        self.eos_token, self.pad_token = config["eos_token"], config.get("pad_token")
        self.eos_token_id, self.pad_token_id = self.special[self.eos_token], self.special.get(self.pad_token)
        self.all_special_tokens = list(self.special)
        env = jinja2.Environment(trim_blocks=True, lstrip_blocks=True)
        self.template = env.from_string(config["chat_template"])
        self.split = re.compile("(%s)|\\w+|\\s|[^\\w\\s]" % "|".join(re.escape(t) for t in self.special))
        self.padding_side = "left"

    def __deepcopy__(self, memo):  # their world deep-copies each agent's tokenizer; this one does not change
        return self

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False, **_):
        text = self.template.render(messages=messages, add_generation_prompt=add_generation_prompt)
        return self.encode(text) if tokenize else text

    def encode(self, text, add_special_tokens=False):
        ids = []
        for m in self.split.finditer(text):
            piece = m.group(0)
            ids.append(self.special[piece] if piece in self.special
                       else 1000 + int(hashlib.md5(piece.encode()).hexdigest()[:6], 16))
        return ids

    def __call__(self, texts, add_special_tokens=False, max_length=None, truncation=False, **_):
        def one(t):
            ids = self.encode(t)
            return ids[:max_length] if truncation and max_length else ids
        return {"input_ids": [one(t) for t in texts] if isinstance(texts, list) else one(texts)}

    def save_pretrained(self, path):
        os.makedirs(path, exist_ok=True)


class Dataset:
    """HF datasets.Dataset, standing in: rows in memory (select, len, index, iterate)."""
    def __init__(self, rows):
        self.rows = list(rows)

    def select(self, indices):
        return Dataset([self.rows[i] for i in indices])

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]

    def __iter__(self):
        return iter(self.rows)


def install_packages():
    make_ray()
    sys.meta_path.insert(0, AbsentFinder(ABSENT))
    vllm = importlib.import_module("vllm")
    vllm.__version__, vllm.SamplingParams = "0.8.5.post1", SamplingParams
    importlib.import_module("vllm.utils").random_uuid = lambda: os.urandom(8).hex()
    transformers = importlib.import_module("transformers")
    transformers.AutoTokenizer = types.SimpleNamespace(from_pretrained=lambda path, **k: Tokenizer(path))
    datasets = importlib.import_module("datasets")

    def load_dataset(kind, data_files=None, **_):
        with open(data_files) as f:
            return {"train": Dataset(json.loads(line) for line in f if line.strip())}
    datasets.load_dataset, datasets.Dataset = load_dataset, Dataset
    datasets.interleave_datasets = lambda sets, **_: sets[0] if len(sets) == 1 else Dataset(r for s in sets for r in s)
    class ClassRegistry(dict):  # class_registry, used at import time by their sync agents (not on the async path)
        def register(self, key):
            def add(cls):
                self[key] = cls
                return cls
            return add

        def get_class(self, key):
            return self[key]
    importlib.import_module("class_registry").ClassRegistry = ClassRegistry
    deepspeed = importlib.import_module("deepspeed")
    deepspeed.zero = types.SimpleNamespace(GatheredParameters=Absent)


# ---- the torch side: device, forward passes, update ---------------------------------------------------

def install_torch():
    import torch
    torch.cuda.current_device = lambda: "cpu"  # no GPU: tensors stay on the CPU
    torch.cuda.synchronize = lambda *a, **k: None
    torch.cuda.empty_cache = lambda: None
    import torch.distributed.distributed_c10d as c10d
    if not hasattr(c10d, "_world"):  # torch 2's process-group registry, read only by the weight sync to vLLM
        c10d._world = type("_world", (Absent,), {"__qualname__": "torch.distributed.distributed_c10d._world"})
    return torch


class DryPolicy:
    """The actor's forward pass, standing in: log-probs for every action token (shape (1, sum(num_actions)) packed)."""
    def __init__(self, offset):
        self.offset = offset

    def __call__(self, sequences, num_actions, attention_mask=None, packed_seq_lens=None, **_):
        import torch
        n = sum(num_actions) if isinstance(num_actions, list) else num_actions
        rows = 1 if packed_seq_lens is not None else sequences.shape[0]
        return torch.full((rows, n), -1.0 - self.offset)

    def eval(self):
        pass

    def train(self):
        pass


class DryReferenceRole:
    """Their ReferenceModelRayActor, standing in: the frozen model's forward pass."""
    def __init__(self, world_size, rank, master_addr, master_port):
        self.policy = DryPolicy(0.05)

    def get_master_addr_port(self):
        return "127.0.0.1", 0

    def init_model_from_pretrained(self, strategy, pretrain, *args, **kwargs):
        return None

    def forward(self, sequences, num_actions, attention_mask=None, packed_seq_lens=None, **kwargs):
        return self.policy(sequences, num_actions, attention_mask, packed_seq_lens=packed_seq_lens)

    def empty_cache(self):
        return None


class RankStrategy:
    """Their DeepspeedStrategy's collective helpers on one rank (all_reduce over this rank alone)."""
    def __init__(self, args, rank, world_size):
        self.args, self.rank, self.world_size = args, rank, world_size

    def is_rank_0(self):
        return self.rank == 0

    def all_reduce(self, data, op="mean"):
        return data

    def print(self, *msg):
        if self.rank == 0:
            print(*msg)


TRAINED = {}


def make_trainer_class():
    from marti.trainers.ppo.trainer import PPOTrainer

    class DryPPOTrainer(PPOTrainer):
        """Their PPOTrainer (fit, ppo_train, experience maker, replay buffer as written); training_step and
        save_checkpoints stand in for the torch update and DeepSpeed's checkpoint."""
        def training_step(self, experience, global_steps):
            import torch
            n = len(experience.sequences) if isinstance(experience.sequences, list) else experience.sequences.shape[0]
            TRAINED.setdefault((self.rolename, global_steps), []).append(n)
            info = {k: float(torch.as_tensor(v, dtype=torch.float).mean()) for k, v in experience.info.items()}
            return {"policy_loss": 0.0, "actor_lr": self.args.actor_learning_rate, "kl": info.get("kl", 0.0),
                    "reward": info.get("reward", 0.0), "return": info.get("return", 0.0),
                    "response_length": info.get("response_length", 0.0), "total_length": info.get("total_length", 0.0)}

        def save_checkpoints(self, args, global_step, client_states={}):
            return None
    return DryPPOTrainer


class DryActorRole:
    """Their ActorModelRayActor: init_trainer builds their PPOTrainer around stand-in forward passes; fit as theirs."""
    def __init__(self, world_size, rank, master_addr, master_port):
        self.world_size, self.rank = world_size, rank

    def get_master_addr_port(self):
        return "127.0.0.1", 0

    def init_model_from_pretrained(self, strategy, pretrain, max_steps=None, rolename="actor", eos_token_id=-1):
        self.args, self.rolename, self.eos_token_id = strategy.args, rolename, eos_token_id
        self.strategy = RankStrategy(strategy.args, self.rank, self.world_size)

    def init_trainer(self, critic_model, initial_model, reward_model, remote_rm_url, vllm_engines=None, critic_train_remote=False):
        import torch
        from marti.trainers.experience_maker import ExperienceMaker
        from marti.trainers.kl_controller import FixedKLController
        from marti.trainers.replay_buffer import NaiveReplayBuffer
        args = self.args
        trainer = object.__new__(make_trainer_class())
        trainer.strategy, trainer.args, trainer.rolename, trainer.eos_token_id = self.strategy, args, self.rolename, self.eos_token_id
        trainer.max_epochs, trainer.dataloader_pin_memory, trainer.freezing_actor_steps = args.max_epochs, False, -1
        trainer.generate_kwargs = {"gamma": args.gamma, "lambd": args.lambd}
        trainer.kl_ctl = FixedKLController(args.init_kl_coef)
        trainer.experience_maker = ExperienceMaker(DryPolicy(0.0), None, None, initial_model, args.prompt_max_len, trainer.kl_ctl,
                                                   self.strategy, remote_rm_url, packing_samples=args.packing_samples)
        current = torch.cuda.current_device
        torch.cuda.current_device = lambda: 0  # their buffer names cuda:<device>; it is offloaded to the CPU
        # as their PPOTrainer.__init__ makes it (buffer_limit 0, buffer_cpu_offload True: the defaults their init_trainer keeps)
        trainer.replay_buffer = NaiveReplayBuffer(args.micro_train_batch_size, 0, True, getattr(args, "packing_samples", False),
                                                  getattr(args, "max_packed_length", None))
        torch.cuda.current_device = current
        trainer.replay_buffer.target_device = torch.device("cpu")
        self.trainer = trainer

    def fit(self, steps, samples_ref, pretrain_dataset=None):  # their ActorModelRayActor.fit
        status = self.trainer.fit(steps, samples_ref)
        status["agent"] = self.rolename
        return status

    def save_model(self):
        return None

    def empty_cache(self):
        return None


# ---- vLLM generation and the hosted coach, from a script ---------------------------------------------

ANSWERS = {}
GENERATED = []


def script_reply(prompt, params, counter):
    """What an agent says: from its place in the team (the system prompt), the problem and a per-prompt counter."""
    position = re.search(r"agent (\d) of (\d)", prompt)
    index = int(position.group(1)) - 1 if position else 0
    problem = next((p for p in ANSWERS if p in prompt), None)
    answer = ANSWERS.get(problem, "0")
    key = int(hashlib.md5(("%s|%d" % (problem, counter)).encode()).hexdigest()[:8], 16)
    wrong = str(int(answer) + 1) if re.fullmatch(r"-?\d+", answer) else answer + "1"
    second_turn = prompt.count("<|im_start|>assistant") > 1
    if index == 0:
        return "Working it out step by step.\nAnswer: %s" % (answer if key % 3 else wrong)
    if index == 1 and not second_turn:
        return ("Checking:\n```python\nprint(%s)\n```" % answer) if key % 5 < 3 else "Result: %s" % answer
    if index == 1:
        # The shipped model's likeliest empty reply (the issue): only the stop token, where min_tokens allows it.
        if key % 4 == 0:
            return "" if params.min_tokens < 1 else "Result"
        return "Result: %s" % answer
    return "\\boxed{%s}" % (answer if key % 5 < 3 else wrong)


class DryEngine:
    """vLLM's async engine (LLMRayActorAsync), standing in: generate_async answers from script_reply."""
    def __init__(self, tokenizer_eos):
        self.eos, self.counts = tokenizer_eos, {}

    async def generate_async(self, prompts, sampling_params):
        counter = self.counts[prompts] = self.counts.get(prompts, 0) + 1
        text = script_reply(prompts, sampling_params, counter) + self.eos
        GENERATED.append({"min_tokens": sampling_params.min_tokens, "max_tokens": sampling_params.max_tokens})
        return types.SimpleNamespace(outputs=[types.SimpleNamespace(text=text, token_ids=[], finish_reason="stop")])

    def __getattr__(self, name):  # wake_up, sleep, reset_prefix_cache, concurrency logging: nothing to do
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda *a, **k: None


def dry_create_vllm_engines(num_engines, tensor_parallel_size, pretrain, *args, **kwargs):
    tokenizer = Tokenizer(pretrain)
    return [Handle(DryEngine(tokenizer.eos_token)) for _ in range(num_engines)]


COACHED = []


async def dry_coach_call(self, prompt):
    """SimpleScalarCoach._call_gemini_direct, standing in: the hosted model's reply; their _parse_score reads it."""
    score = 3 + int(hashlib.md5(prompt.encode()).hexdigest()[:4], 16) % 8
    COACHED.append(score)
    text = "The agent did its part.\nPROCESS_SCORE: %d" % score
    if "Agent: Verifier" in prompt:  # the exported template asks the Verifier's coach for the answer's correctness too
        text += "\nANSWER_CORRECT: %d" % (score > 5)
    return self._parse_score(text), text


# ---- SandboxFusion: its HTTP API, running the code with python3 --------------------------------------

class SandboxHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        try:
            run = subprocess.run([sys.executable, "-c", body["code"]], capture_output=True, text=True, timeout=body.get("run_timeout") or 10)
            result = {"status": "Finished", "stdout": run.stdout, "stderr": run.stderr, "return_code": run.returncode}
        except subprocess.TimeoutExpired:
            result = {"status": "TimeLimitExceeded", "stdout": "", "stderr": "", "return_code": None}
        data = json.dumps({"status": "Success", "run_result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def start_sandbox(url):
    port = int(re.search(r":(\d+)/", url).group(1))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), SandboxHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()


# ---- bugs put back, one at a time -----------------------------------------------------------------------

def put_back(bug, workflow_file, argv):
    """The four faults of the earlier export, restored in this checkout's copy (never in the project)."""
    text = open(workflow_file).read()
    if bug == "grader":  # the earlier workflow graded with their qwen_eval_timeout, which needs func_timeout
        start, end = text.index("def is_correct(answer, label):"), text.index("def action_reward(")
        text = text[:start] + ('def is_correct(answer, label):\n    if answer is None:\n        return False\n'
                               '    from marti.verifiers.qwen.qwen_eval_timeout import qwen_reward_fn_timeout\n'
                               '    return qwen_reward_fn_timeout("\\\\boxed{" + answer + "}", str(label)) > 0\n\n\n') + text[end:]
    elif bug == "min-tokens":
        text = text.replace("params.min_tokens = 1", "params.min_tokens = 0")
    elif bug == "filter":  # the earlier layout: 2 GPUs per agent, filter on, 12 x 2 trajectories, train batch 24
        argv += ["filter_agents_data=true", "default_agent.actor_num_gpus_per_node=2", "default_agent.ref_num_gpus_per_node=2",
                 "default_agent.vllm_num_engines=2", "default_agent.micro_rollout_batch_size=8"]
    open(workflow_file, "w").write(text)
    return argv


# ---- the run -------------------------------------------------------------------------------------------

def generated_counter():
    """Wraps their MultiAgentWorldAsync.generate_samples to count each agent's samples per rank and step."""
    from marti.worlds.multi_agent_world_async import MultiAgentWorldAsync
    original = MultiAgentWorldAsync.generate_samples
    counts, errors = [], []

    def generate_samples(self, all_prompts, rank=0, world_size=8):
        out = original(self, all_prompts, rank, world_size)
        counts.append([sum(len(s.response_length) for s in agent) for agent in out["sample"]])
        return out
    MultiAgentWorldAsync.generate_samples = generate_samples

    from marti.worlds.workflows import workflow_wrapper
    cls = workflow_wrapper.MultiAgentWrapper._cls
    get = cls.get_responses

    async def get_responses(self, expected_len):
        results = await get(self, expected_len)
        errors.extend(r.get("error") for r in results if r.get("error") or not r.get("trajectory"))
        return results
    cls.get_responses = get_responses
    return counts, errors


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", required=True)
    parser.add_argument("--put-back", choices=["filter", "tensorboard", "grader", "min-tokens"])
    parser.add_argument("--config-name", default="mappa_mathchat")
    parser.add_argument("overrides", nargs="*")
    opts = parser.parse_args()
    say("mode %s%s; their checkout %s" % (opts.mode, ", bug put back: " + opts.put_back if opts.put_back else "", os.getcwd()))
    sys.path.insert(0, os.getcwd())
    for line in open("data/mappa/train.jsonl"):
        r = json.loads(line)
        ANSWERS[r["prompt"]] = str(r["answer"])
    for line in open("data/mappa/heldout.jsonl"):
        r = json.loads(line)
        ANSWERS[r["prompt"]] = str(r["answer"])
    install_packages()
    torch = install_torch()
    say("torch %s (Debian, CPU); stood in for: vLLM generation, the policy/reference forward passes and the update, "
        "Ray placement, the hosted coach's HTTP call, SandboxFusion (local server running python3), HF transformers' "
        "tokenizer and datasets' JSON loader; absent (imported, never called): %s" % (torch.__version__, ", ".join(ABSENT)))
    import marti.controllers.multi_agent_controller as mac
    import marti.verifiers.coach.external_coach as coach
    mac.create_vllm_engines = dry_create_vllm_engines
    mac.ActorModelRayActor, mac.ReferenceModelRayActor = ActorClass(DryActorRole), ActorClass(DryReferenceRole)
    coach.SimpleScalarCoach._call_gemini_direct = dry_coach_call
    os.environ.setdefault("GEMINI_API_KEY", "dry-run")
    counts, errors = generated_counter()
    start_sandbox("http://127.0.0.1:8080/run_code")
    argv = put_back(opts.put_back, "data/mappa/mappa_workflow.py", list(opts.overrides)) if opts.put_back else list(opts.overrides)
    launcher = importlib.util.spec_from_file_location("mappa_train", "data/mappa/mappa_train.py")
    module = importlib.util.module_from_spec(launcher)
    launcher.loader.exec_module(module)
    log_dir = os.path.abspath(module.LOG_DIR)
    if opts.put_back == "tensorboard":  # the earlier launcher: it turned their use_tensorboard on
        module.check_args = lambda argv: None
        argv.append("use_tensorboard='%s'" % log_dir)
    sys.argv = ["data/mappa/mappa_train.py", "--config-name", opts.config_name] + argv
    say("python %s" % " ".join(sys.argv))
    try:
        module.main()
    except SystemExit as e:
        if e.code not in (None, 0):
            workflow_errors(errors)
            fail("their entry exited: %s" % e.code)
    except BaseException as e:
        import traceback
        traceback.print_exc()
        workflow_errors(errors)
        fail("their code raised %s: %s" % (type(e).__name__, e))
    check(opts, counts, errors, log_dir)


def workflow_errors(errors):
    if errors:
        say("%d workflow call(s) returned an empty trajectory (their wrapper catches the error); first: %s" % (len(errors), errors[0]))


def check(opts, counts, errors, log_dir):
    """What a passing dry run shows: every workflow call played, every generated sample trained, the logs written."""
    if errors:
        fail("%d workflow call(s) returned an empty trajectory; first error: %s" % (len(errors), errors[0]))
    steps = sorted({s for (_, s) in TRAINED})
    if steps != [1, 2]:
        fail("trained at steps %s, expected [1, 2]" % steps)
    import yaml
    config = yaml.safe_load(open("marti/cli/configs/%s.yaml" % opts.config_name))
    roles = ["actor_" + list(a)[0] for a in config["agents"]]  # their rolename, in the agents' order
    ranks = len(counts) // len(steps)
    for i, step in enumerate(steps):
        generated = [sum(c[a] for c in counts[i * ranks:(i + 1) * ranks]) for a in range(len(roles))]
        trained = [sum(TRAINED.get((r, step), [])) for r in roles]
        say("step %d: samples generated per agent %s, trained %s (%s)" % (step, generated, trained, ", ".join(roles)))
        if generated != trained:
            fail("step %d: their filter or batching dropped samples: generated %s, trained %s" % (step, generated, trained))
    if any(g["min_tokens"] < 1 for g in GENERATED):
        fail("a generation asked for min_tokens 0")
    say("%d generations, %d coach calls (%s mode)" % (len(GENERATED), len(COACHED), opts.mode))
    da = config["default_agent"]
    expected = 0 if opts.mode == "outcome" else len(roles) * da["rollout_batch_size"] * da["n_samples_per_prompt"] * len(steps)
    if len(COACHED) != expected:
        fail("%d coach calls in %s mode, expected %d (one per agent and trajectory in training, none in evaluation)" % (len(COACHED), opts.mode, expected))
    files = glob.glob(os.path.join(log_dir, "events.out.tfevents.*"))
    if not files:
        fail("no TensorBoard event file in %s" % log_dir)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    events = EventAccumulator(log_dir)
    events.Reload()
    tags = events.Tags()["scalars"]
    by_step = {}
    for tag in tags:
        for e in events.Scalars(tag):
            by_step.setdefault(e.step, []).append(tag)
    say("TensorBoard: %d event file(s), %d tags, scalars per step %s" % (len(files), len(tags), {s: len(t) for s, t in sorted(by_step.items())}))
    for needed in ["eval/reward", "eval/acc_heldout", "train/_rollout_metadata/accuracy"]:
        if needed not in tags:
            fail("TensorBoard has no %s" % needed)
    say("eval/acc_heldout at step 0: %.4f; rollout accuracy at steps 1, 2: %s" % (
        events.Scalars("eval/acc_heldout")[0].value, [round(e.value, 4) for e in events.Scalars("train/_rollout_metadata/accuracy")]))
    say("PASS")


if __name__ == "__main__":
    main()
