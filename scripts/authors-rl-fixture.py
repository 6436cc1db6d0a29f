#!/usr/bin/python3
"""
Runs the MAPPA authors' trainer (ltjed/multiagent-coaching, built on OpenRLHF) on fixed inputs and
writes what it computes to test/fixtures/authors-rl/reinforce-pp.json, for
test/unit/rl/authors-parity.test.ts to compare src/core/rl/ against.

Usage (Debian's python3 with python3-torch and python3-tqdm installed):
    git clone <their repository or its mirror> /tmp/multiagent-coaching
    /usr/bin/python3 scripts/authors-rl-fixture.py /tmp/multiagent-coaching [--out FILE]

Their code is imported from the checkout given on the command line, never copied here. What runs
is theirs: `ExperienceMaker.make_experience` (k1 KL), `make_experience_list` (`compute_reward`: KL
folded into the per-token reward, `get_cumulative_returns`, the REINFORCE++ global whitening),
`NaiveReplayBuffer.append` / `normalize` (the second whitening `fit` applies), and
`PPOTrainer.training_step_actor` (`_build_truncation_mask`, `PolicyLoss` with its action mask).

Stood in for, at the boundary only (none of them computes a number this fixture records):
- imports that cannot load here: ray, vllm, transformers, datasets, peft, deepspeed, flash_attn
  (every attribute a placeholder; ray.get/ray.put return their argument), their answer grader
  `marti.verifiers.auto_verify` (needs latex2sympy2, not packaged) and
  `marti.helpers.distributed.distributed_utils` (process groups; Debian's torch has no c10d);
- the model calls: the actor returns fixed log-probs (old ones in `make_experience`, new ones,
  as a leaf tensor, in the training step); the reference model returns fixed log-probs;
- the device: torch.cuda.current_device() answers "cpu";
- the strategy: one process (all_reduce returns its argument, is_rank_0 is true), `backward`
  calls loss.backward(), the optimizer step does nothing. DeepSpeed's gradient accumulation (each
  micro-batch's loss scaled by 1/accumulation steps) is written out below where it is used.

Fixed inputs: a seeded torch generator, values rounded to float32 (the fixture holds the exact
float32 values, so a reader in double precision starts from the same numbers).
"""
import argparse
import importlib.abc
import importlib.machinery
import json
import os
import subprocess
import sys
import types

STUB_ROOTS = {'ray', 'vllm', 'transformers', 'datasets', 'peft', 'deepspeed', 'flash_attn'}
STUB_MODULES = {'marti.verifiers.auto_verify', 'marti.helpers.distributed.distributed_utils'}


class _Placeholder:
    def __init__(self, *a, **k):
        pass

    def __call__(self, *a, **k):
        return self

    def __getattr__(self, name):
        return _Placeholder()


class _StubModule(types.ModuleType):
    def __getattr__(self, name):
        if name.startswith('__'):
            raise AttributeError(name)
        return _Placeholder


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Answers the imports listed above with placeholder modules (and their submodules)."""

    def find_spec(self, name, path, target=None):
        if name.split('.')[0] in STUB_ROOTS or name in STUB_MODULES:
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return _StubModule(spec.name)

    def exec_module(self, module):
        module.__path__ = []
        if module.__name__ == 'ray':
            module.get = lambda x, *a, **k: x
            module.put = lambda x, *a, **k: x
            module.remote = lambda *a, **k: (a[0] if a and callable(a[0]) else (lambda f: f))


def parse_args():
    p = argparse.ArgumentParser(description='Runs the MAPPA authors\' REINFORCE++ and PPO code on fixed inputs; writes a JSON fixture.')
    p.add_argument('checkout', help='a git checkout of ltjed/multiagent-coaching')
    p.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'test', 'fixtures', 'authors-rl', 'reinforce-pp.json'))
    return p.parse_args()


def git(checkout, *args):
    return subprocess.run(['git', '-C', checkout, *args], check=True, capture_output=True, text=True).stdout.strip()


def main():
    args = parse_args()
    checkout = os.path.abspath(args.checkout)
    if not os.path.isfile(os.path.join(checkout, 'marti', 'trainers', 'experience_maker.py')):
        sys.exit(f'authors-rl-fixture: {checkout} holds no marti/trainers/experience_maker.py; '
                 'give a checkout of ltjed/multiagent-coaching')
    try:
        top = os.path.realpath(git(checkout, 'rev-parse', '--show-toplevel'))
        commit = git(checkout, 'rev-parse', 'HEAD')
        dirty = git(checkout, 'status', '--porcelain') != ''
    except (subprocess.CalledProcessError, FileNotFoundError):
        top = None
    if top != os.path.realpath(checkout):
        sys.exit(f'authors-rl-fixture: {checkout} is not a git checkout of its own; clone the repository so the fixture can name its commit')
    if dirty:
        sys.exit(f'authors-rl-fixture: {checkout} has local changes; the fixture must come from an unmodified commit')

    sys.meta_path.insert(0, _StubFinder())
    sys.path.insert(0, checkout)
    import torch
    torch.cuda.current_device = lambda: 'cpu'  # the device boundary: everything runs on the CPU

    from marti.models.loss import PolicyLoss
    from marti.trainers.experience_maker import ExperienceMaker
    from marti.trainers.kl_controller import FixedKLController
    from marti.trainers.ppo.trainer import PPOTrainer
    from marti.trainers.replay_buffer import NaiveReplayBuffer
    from marti.worlds.base_world import Samples

    gen = torch.Generator().manual_seed(20260123)
    EOS = 2  # the parity Llama's eos_token_id; ids stay below its vocabulary of 97

    def f32(values):
        return [float(v) for v in torch.tensor(values, dtype=torch.float32)]

    def uniform(n, lo, hi):
        return f32((torch.rand(n, generator=gen) * (hi - lo) + lo).tolist())

    def ints(n, lo, hi):
        return torch.randint(lo, hi, (n,), generator=gen).tolist()

    def make_sample(agent, length, reward, truncated=False, kl_scale=1.0, prompt_len=None):
        prompt = ints(prompt_len or int(torch.randint(2, 6, (1,), generator=gen)), 3, 97)
        action = ints(length, 3, 97)
        if not truncated:
            action[-1] = EOS
        old = uniform(length, -6.0, -0.05)
        ref = f32([o + kl_scale * d for o, d in zip(old, uniform(length, -1.0, 1.0))])
        return {'agent': agent, 'prompt': prompt, 'action': action, 'reward': float(torch.tensor(reward, dtype=torch.float32)),
                'old_logprobs': old, 'ref_logprobs': ref, 'truncated': truncated}

    class Args:
        """The strategy.args fields their code reads, at the values MAPPA's scripts set."""
        perf = False
        colocate_actor_ref = colocate_all_models = colocate_critic_reward = False
        use_kl_loss = False
        use_kl_estimator_k3 = False
        no_advantage_std_norm = False
        reward_clip_range = [-10, 10]  # default.yaml
        advantage_estimator = 'reinforce_plus_plus'
        mask_truncated_completions = True
        aux_loss_coef = 0
        training_mode = 'rl'

    class Strategy:
        args = Args()

        def is_rank_0(self):
            return True

        def all_reduce(self, x, op='mean'):
            return x  # one process

        def backward(self, loss, model, optimizer):
            loss.backward()

        def optimizer_step(self, *a, **k):
            pass

    class Table:
        """The actor / reference-model boundary: hands back fixed log-probs for the packed sequence."""

        def __init__(self, values):
            self.values = values
            self.forward = types.SimpleNamespace(remote=lambda *a, **k: self(*a, **k))

        def __call__(self, sequences, num_actions, attention_mask=None, return_output=False, packed_seq_lens=None):
            v = self.values
            return (v, {}) if return_output else v

        def eval(self):
            pass

        def train(self):
            pass

    def new_buffer(micro_batch):
        """Their replay buffer; its constructor names a CUDA device it only uses in sample(), which is not called."""
        torch.cuda.current_device = lambda: 0
        try:
            return NaiveReplayBuffer(sample_batch_size=micro_batch, cpu_offload=True, packing_samples=True)
        finally:
            torch.cuda.current_device = lambda: 'cpu'

    def packed(samples):
        """Their packed Samples (base_world.py: prompt + action per sample, attention ids j + 1, action mask of ones)."""
        seq, att, lens, nact = [], [], [], []
        for j, s in enumerate(samples):
            seq += s['prompt'] + s['action']
            att += [j + 1] * (len(s['prompt']) + len(s['action']))
            lens.append(len(s['prompt']) + len(s['action']))
            nact.append(len(s['action']))
        return Samples(
            sequences=torch.tensor(seq).unsqueeze(0), attention_mask=torch.tensor(att).unsqueeze(0),
            action_mask=torch.tensor([1] * sum(nact)).unsqueeze(0), num_actions=nact, packed_seq_lens=lens,
            response_length=torch.tensor(nact, dtype=torch.float), total_length=torch.tensor(lens, dtype=torch.float),
            labels=torch.tensor([s['reward'] for s in samples], dtype=torch.float32))

    def authors_advantages(samples, kl_coef, rollout_batch=2):
        """One agent's trainer: make_experience per rollout micro-batch, make_experience_list, the replay buffer's normalize."""
        strategy = Strategy()
        experiences_in = []
        for k in range(0, len(samples), rollout_batch):
            part = samples[k:k + rollout_batch]
            old = torch.tensor(sum((s['old_logprobs'] for s in part), []), dtype=torch.float32).unsqueeze(0)
            ref = torch.tensor(sum((s['ref_logprobs'] for s in part), []), dtype=torch.float32).unsqueeze(0)
            experiences_in.append((packed(part), old, ref))
        maker = ExperienceMaker(actor=None, critic=None, reward_model=None, initial_model=None, prompt_max_len=1024,
                                kl_controller=FixedKLController(kl_coef), strategy=strategy, packing_samples=True)
        queue = list(experiences_in)

        def make_experience(samples_):
            part, old, ref = queue.pop(0)
            maker.actor, maker.initial_model = Table(old), Table(ref)
            return ExperienceMaker.make_experience(maker, part)

        maker.make_experience = make_experience
        per_token_rewards = []
        from marti.models import model_utils
        original = model_utils.compute_reward
        import marti.trainers.experience_maker as em

        def recording_compute_reward(*a, **k):
            out = original(*a, **k)
            per_token_rewards.extend([r.tolist() for r in out])
            return out

        em.compute_reward = recording_compute_reward
        try:
            experiences = maker.make_experience_list([p for p, _, _ in experiences_in], gamma=1.0)
        finally:
            em.compute_reward = original
        kl = [x.tolist() for e in experiences for x in e.info['kl']]
        returns = [r.tolist() for e in experiences for r in e.returns]
        global_adv = [a.tolist() for e in experiences for a in e.advantages]
        buffer = new_buffer(1)
        for e in experiences:
            buffer.append(e)
        buffer.normalize('advantages', strategy)
        final_adv = [item.advantages.tolist() for item in buffer.items]
        return {'token_rewards': per_token_rewards, 'returns': returns, 'kl_means': kl,
                'advantages_global': global_adv, 'advantages': final_adv}

    def authors_loss(samples, log_ratio, advantages, micro_batch, clip_eps=0.2):
        """PPOTrainer.training_step_actor on packed micro-batches of `micro_batch` samples.
        Returns per micro-batch: the loss and d(loss)/d(new log-prob) per action token."""
        trainer = PPOTrainer.__new__(PPOTrainer)
        trainer.args = Args()
        trainer.strategy = Strategy()
        trainer.actor_loss_fn = PolicyLoss(clip_eps, clip_eps, 'ppo', True)  # default.yaml: token_level_loss true
        trainer.eos_token_id = EOS
        trainer.kl_ctl = FixedKLController(0.01)
        trainer.aux_loss = False
        trainer.pretrain_dataloader = None
        trainer.ema_model = None
        trainer.actor_optim = None
        trainer.actor_scheduler = types.SimpleNamespace(get_last_lr=lambda: [0.0])
        parts = []
        buffer = new_buffer(micro_batch)
        for k in range(0, len(samples), micro_batch):
            idx = list(range(k, min(k + micro_batch, len(samples))))
            part = [samples[i] for i in idx]
            old = [torch.tensor(samples[i]['old_logprobs'], dtype=torch.float32) for i in idx]
            adv = [torch.tensor(advantages[i], dtype=torch.float32) for i in idx]
            p = packed(part)
            seqs = [torch.tensor(s['prompt'] + s['action']) for s in part]
            from marti.trainers.experience_maker import Experience
            info = {'kl': torch.zeros(len(idx)), 'reward': p.labels, 'response_length': p.response_length,
                    'total_length': p.total_length, 'return': torch.zeros(len(idx))}
            exp = Experience(seqs, old, None, None, [a.clone() for a in adv], adv, None,
                             [torch.ones(len(s['action']), dtype=torch.long) for s in part], info)
            buffer.append(exp)
            batch = buffer.collate_fn(buffer.items[-len(idx):])
            new = torch.tensor(sum((f32([o + r for o, r in zip(samples[i]['old_logprobs'], log_ratio[i])]) for i in idx), []),
                               dtype=torch.float32).unsqueeze(0).requires_grad_(True)
            trainer.actor = Table(new)
            status = PPOTrainer.training_step_actor(trainer, batch)
            grads, at = [], 0
            for i in idx:
                n = len(samples[i]['action'])
                grads.append(new.grad[0, at:at + n].tolist())
                at += n
            parts.append({'samples': idx, 'loss': status['policy_loss'], 'grad_logprobs': grads})
        return parts

    # ---- REINFORCE++: two agents, MAPPA's KL coefficient and a larger one --------------------------------
    def agents_batch(kl_scale=1.0, truncate=False):
        xs = [make_sample('solver', n, r, kl_scale=kl_scale) for n, r in [(3, 0.8), (5, 0.3), (1, 1.0), (4, 0.0)]]
        xs += [make_sample('verifier', n, r, kl_scale=kl_scale) for n, r in [(2, 0.6), (6, 0.9), (3, 0.1)]]
        if truncate:
            xs.insert(2, make_sample('solver', 4, 0.7, truncated=True, kl_scale=kl_scale))
        return xs

    reinforce_cases = []
    for name, kl_coef, truncate in [('clean', 0.01, False), ('strong-kl', 0.2, False), ('truncated', 0.01, True)]:
        samples = agents_batch(truncate=truncate)
        agents = sorted({s['agent'] for s in samples})
        case = {'name': name, 'kl_coef': kl_coef, 'samples': samples, 'per_agent': {}, 'pooled': None,
                'per_agent_without_truncated': {}, 'pooled_without_truncated': None}
        for agent in agents:
            own = [i for i, s in enumerate(samples) if s['agent'] == agent]
            case['per_agent'][agent] = {'indices': own, **authors_advantages([samples[i] for i in own], kl_coef)}
            if truncate:
                kept = [i for i in own if not samples[i]['truncated']]
                case['per_agent_without_truncated'][agent] = {'indices': kept, **authors_advantages([samples[i] for i in kept], kl_coef)}
        everyone = list(range(len(samples)))
        case['pooled'] = {'indices': everyone, **authors_advantages(samples, kl_coef)}
        if truncate:
            kept = [i for i in everyone if not samples[i]['truncated']]
            case['pooled_without_truncated'] = {'indices': kept, **authors_advantages([samples[i] for i in kept], kl_coef)}
        reinforce_cases.append(case)

    # A near-constant batch: every reward 0 and the KL tiny, so the returns' std falls below 1e-4.
    flat = [make_sample('solver', n, 0.0, kl_scale=1e-3) for n in (2, 3, 2)]
    reinforce_cases.append({'name': 'near-constant', 'kl_coef': 0.01, 'samples': flat,
                            'per_agent': {'solver': {'indices': [0, 1, 2], **authors_advantages(flat, 0.01)}}})

    # ---- PPO-clip loss: one agent's mini-batch, log-ratios on both sides of the clip, one truncated action ---
    ppo_samples = [make_sample('solver', n, 0.5, truncated=(k == 2)) for k, n in enumerate([4, 3, 5, 2])]
    log_ratio = [f32([0.45, -0.05, 0.12, -0.4]), f32([0.02, 0.3, -0.3]), f32([0.1, 0.1, -0.1, 0.5, 0.0]), f32([-0.6, 0.08])]
    ppo_adv = [f32([1.3, -0.7, 0.9, -1.1]), f32([-0.8, 1.2, 0.5]), f32([2.0, -2.0, 1.0, 1.0, 1.0]), f32([0.6, -1.5])]
    ppo = {
        'clip_eps': 0.2, 'samples': ppo_samples, 'log_ratio': log_ratio, 'advantages': ppo_adv,
        # One micro-batch of all four: the loss is the mean over the unmasked action tokens.
        'one_micro_batch': authors_loss(ppo_samples, log_ratio, ppo_adv, micro_batch=4),
        # MAPPA's micro_train_batch_size 1 (mathchat_with_coach.yaml, run_train_mathchat.sh), gradient
        # accumulation over the four: DeepSpeed scales each micro-batch's loss by 1/4 before summing.
        'micro_batches_of_one': authors_loss(ppo_samples, log_ratio, ppo_adv, micro_batch=1),
        'accumulation_scale': 0.25,
    }

    out = {
        'about': 'The MAPPA authors\' trainer run on fixed inputs: REINFORCE++ (KL folded into the per-token reward, '
                 'returns with discount 1, global whitening then the replay buffer\'s) and the PPO-clip loss with its '
                 'per-token action mask. Made by scripts/authors-rl-fixture.py; compared by test/unit/rl/authors-parity.test.ts.',
        'source': {'repository': 'https://github.com/ltjed/multiagent-coaching', 'commit': commit,
                   'command': f'/usr/bin/python3 scripts/authors-rl-fixture.py <checkout of {commit[:7]}>',
                   'python': sys.version.split()[0], 'torch': torch.__version__,
                   'stood_in_for': sorted(STUB_ROOTS) + sorted(STUB_MODULES) +
                   ['actor / reference model (fixed log-probs)', 'torch.cuda.current_device -> cpu', 'strategy (one process)']},
        'eos_token_id': EOS,
        'reinforce_pp': reinforce_cases,
        'ppo': ppo,
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, 'w') as fh:
        json.dump(out, fh, indent=1)
        fh.write('\n')
    print(f'authors-rl-fixture: wrote {os.path.relpath(args.out)} from {commit}')


if __name__ == '__main__':
    main()
