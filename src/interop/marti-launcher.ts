/**
 * `mappa_train.py`, the export's entry to the authors' trainer with TensorBoard logs. Their
 * `save_logs` hands every value of a step's log dictionary to TensorBoard's `add_scalar`, and every
 * step's dictionary holds a nested one (`_rollout_metadata`, see the fixture's `saveLogs`), which
 * `add_scalar` refuses: with `use_tensorboard` set, their entry crashes after the first step.
 *
 * So the exported config leaves `use_tensorboard` (and W&B) off, and their own entry runs with no
 * logger (metrics in `<save_path>/eval_results/*.json` and on the console). This launcher, our own
 * code, lets TensorBoard take the nested values (a dictionary becomes one scalar per number in it,
 * `train/_rollout_metadata/accuracy`; None and text are left out), turns `use_tensorboard` on, and
 * runs their unmodified `marti.cli.commands.train` as `python -m` would.
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
It lets TensorBoard's add_scalar take the nested values of their step logs (one scalar per number
in a dictionary; None and text left out), turns use_tensorboard on (logs in LOG_DIR unless you pass
use_tensorboard=...), then runs marti.cli.commands.train unmodified, as "python -m" does.
"""
import os
import runpy
import sys

LOG_DIR = ${JSON.stringify(logDir)}
TRAIN_MODULE = "marti.cli.commands.train"


def scalars(tag, value):
    """(tag, value) pairs add_scalar takes: a dictionary spreads into tag/key, None and text are left out.
    Example: scalars("train/_rollout_metadata", {"accuracy": 0.5, "total": 24}) ->
             [("train/_rollout_metadata/accuracy", 0.5), ("train/_rollout_metadata/total", 24)]
    """
    if isinstance(value, dict):
        return [pair for key, inner in value.items() for pair in scalars("%s/%s" % (tag, key), inner)]
    if value is None or isinstance(value, (str, bytes)):
        return []
    return [(tag, value)]


def install(writer_class=None):
    """Wraps SummaryWriter.add_scalar (torch.utils.tensorboard) so that it takes nested values."""
    if writer_class is None:
        from torch.utils.tensorboard import SummaryWriter as writer_class
    original = writer_class.add_scalar
    if getattr(original, "mappa_nested", False):
        return
    def add_scalar(self, tag, scalar_value, *args, **kwargs):
        for name, value in scalars(tag, scalar_value):
            original(self, name, value, *args, **kwargs)
    add_scalar.mappa_nested = True
    writer_class.add_scalar = add_scalar


def hydra_args(argv):
    """argv with use_tensorboard=<absolute LOG_DIR> added unless it sets use_tensorboard itself."""
    if any(a.split("=")[0].lstrip("+~") == "use_tensorboard" for a in argv):
        return list(argv)
    return list(argv) + ["use_tensorboard='%s'" % os.path.abspath(LOG_DIR)]


def main():
    install()
    sys.argv = [sys.argv[0]] + hydra_args(sys.argv[1:])
    sys.path.insert(0, os.getcwd())  # the repository root, where marti/ is
    runpy.run_module(TRAIN_MODULE, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
`;
}
