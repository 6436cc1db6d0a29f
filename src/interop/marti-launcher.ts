/**
 * `mappa_train.py`, the export's entry to the authors' trainer with TensorBoard logs. Their own
 * TensorBoard path cannot be used: with `use_tensorboard` set and no W&B key, `_init_logging`
 * (marti/controllers/base_controller.py) raises UnboundLocalError at build, because an `import os`
 * inside its `use_wandb` branch makes `os` local to the whole function; and later their `save_logs`
 * would hand `add_scalar` the dictionary `_rollout_metadata`, which it refuses.
 *
 * So the config sets no logger, and this launcher, our own code, wraps their `save_logs`: after it
 * runs (it logs nothing without a logger), the launcher writes the same dictionary to TensorBoard with
 * torch's `SummaryWriter`, one scalar per number: a dictionary spreads into `tag/key`, a list into
 * `tag/0`, `tag/1`, ...; None and text are left out. Tags follow their W&B naming (`eval/...` kept,
 * everything else under `train/`, perf stats under `perf/experience_maker/`). Then it runs their
 * unmodified `marti.cli.commands.train` as `python -m` would.
 *
 * For: src/interop/marti.ts. Not for: W&B (their `wandb.log` takes nested values as they are).
 *
 * Example: martiLauncherFile('logs/mappa-math-chain-process-seed0')
 *          -> '"""\nThe MAPPA authors\' trainer with TensorBoard logs ...\nLOG_DIR = "logs/mappa-math-chain-process-seed0"\n...'
 */

/** The launcher's name in the export folder and in ./data/mappa on the cluster. */
export const LAUNCHER_FILE = 'mappa_train.py';

/** The launcher's text; `logDir` relative to the repository root, where it is run from. */
export function martiLauncherFile(logDir: string): string {
  return String.raw`"""
The MAPPA authors' trainer with TensorBoard logs, written by "mappa export --target marti".

Run from the repository root, with Hydra's arguments:
    python data/mappa/mappa_train.py --config-name mappa_mathchat [key=value ...]
Their use_tensorboard path stops at build (UnboundLocalError in _init_logging), so this launcher writes
the logs itself: it wraps their save_logs and writes every number of the dictionary it receives
(nested dictionaries and lists flattened; None and text left out) to LOG_DIR with torch's
SummaryWriter, then runs marti.cli.commands.train unmodified, as "python -m" does.
"""
import atexit
import os
import runpy
import sys

LOG_DIR = ${JSON.stringify(logDir)}
TRAIN_MODULE = "marti.cli.commands.train"


def scalars(tag, value):
    """(tag, number) pairs: a dictionary spreads into tag/key, a list into tag/0, tag/1, ...; None and text are left out.
    Example: scalars("train/_rollout_metadata", {"accuracy": None, "total": 24, "k": [1, 2]}) ->
             [("train/_rollout_metadata/total", 24), ("train/_rollout_metadata/k/0", 1), ("train/_rollout_metadata/k/1", 2)]
    """
    if isinstance(value, dict):
        return [pair for key, inner in value.items() for pair in scalars("%s/%s" % (tag, key), inner)]
    if isinstance(value, (list, tuple)):
        return [pair for i, inner in enumerate(value) for pair in scalars("%s/%d" % (tag, i), inner)]
    if value is None or isinstance(value, (str, bytes)):
        return []
    if hasattr(value, "tolist"):  # a tensor or numpy value: its number(s)
        return scalars(tag, value.tolist())
    if isinstance(value, bool):
        return [(tag, int(value))]
    if isinstance(value, (int, float)):
        return [(tag, value)]
    return []


def step_scalars(logs_dict, perf_stats):
    """A save_logs call's pairs, named as their W&B logs: eval/ keys kept, the rest under train/, perf stats under perf/experience_maker/."""
    pairs = [p for k, v in logs_dict.items() for p in scalars(k if "eval/" in k else "train/" + k, v)]
    return pairs + [p for k, v in (perf_stats or {}).items() for p in scalars("perf/experience_maker/" + k, v)]


def open_writer(log_dir):
    from torch.utils.tensorboard import SummaryWriter
    return SummaryWriter(log_dir)


def install(controller_class=None, writer_factory=open_writer, log_dir=None):
    """Wraps controller_class.save_logs (their BaseController's) so that each call also writes TensorBoard scalars."""
    if controller_class is None:
        from marti.controllers.base_controller import BaseController as controller_class
    original = controller_class.save_logs
    if getattr(original, "mappa_logs", False):
        return
    state = {"writer": None}

    def save_logs(self, args, global_step, logs_dict, perf_stats):
        original(self, args, global_step, logs_dict, perf_stats)
        if global_step % args.logging_steps != 0:
            return
        if state["writer"] is None:
            state["writer"] = writer_factory(os.path.abspath(log_dir or LOG_DIR))
            atexit.register(state["writer"].close)
        for name, value in step_scalars(logs_dict, perf_stats):
            state["writer"].add_scalar(name, value, global_step)
        state["writer"].flush()
    save_logs.mappa_logs = True
    controller_class.save_logs = save_logs


def check_args(argv):
    """Refuses use_tensorboard (their path stops at build); the logs go to LOG_DIR instead."""
    for a in argv:
        if a.split("=")[0].lstrip("+~") == "use_tensorboard":
            sys.exit("mappa_train.py: remove %s: their use_tensorboard path stops at build (UnboundLocalError in _init_logging); "
                     "this launcher writes TensorBoard logs to %s itself" % (a, LOG_DIR))


def main():
    check_args(sys.argv[1:])
    sys.path.insert(0, os.getcwd())  # the repository root, where marti/ is
    install()
    runpy.run_module(TRAIN_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
`;
}
