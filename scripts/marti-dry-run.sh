#!/usr/bin/env bash
# The MARTI export, run through the MAPPA authors' own trainer code up to step 2 (scripts/marti-dry-run.py says
# what runs as written and what is stood in for). For each reward mode it exports the embedded default
# (`mappa export --target marti`), follows the export README's steps 1, 3 and 4 in a copy of their checkout, and
# runs the launcher there: build, the step-0 evaluation, rollout steps 1 and 2. Not part of npm test.
#
# usage: scripts/marti-dry-run.sh <checkout of ltjed/multiagent-coaching at ed66921> [--put-back BUG] [--modes "process outcome mixed"]
#   BUG: filter | tensorboard | grader | min-tokens (one of the earlier export's faults, restored in the copy only)
# Needs Debian's /usr/bin/python3 with python3-torch python3-antlr4 python3-yaml python3-jinja2 python3-sympy python3-regex
# python3-pylatexenc python3-dotenv python3-srsly python3-json5 python3-numpy python3-requests python3-tqdm python3-protobuf
# python3-absl, and three source trees (docs/cli.md, "Dry run through their code", says how to build them):
#   HYDRA_SRC (hydra v1.3.2), OMEGACONF_SRC (omegaconf v2.3.0), TENSORBOARD_SRC (tensorboard 2.12.3 with its protos compiled).
# Example: HYDRA_SRC=/tmp/hydra OMEGACONF_SRC=/tmp/omegaconf TENSORBOARD_SRC=/tmp/tensorboard scripts/marti-dry-run.sh /tmp/marti
#          -> "[dry-run] PASS" once per mode, exit 0
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
die() { echo "marti-dry-run: $*" >&2; exit 2; }

[ $# -ge 1 ] || die "usage: scripts/marti-dry-run.sh <checkout of ltjed/multiagent-coaching> [--put-back BUG] [--modes \"process outcome mixed\"]"
checkout="$(cd "$1" 2>/dev/null && pwd)" || die "$1: no such folder; pass a checkout of ltjed/multiagent-coaching"
shift
put_back=""; modes="process outcome mixed"
while [ $# -gt 0 ]; do
  case "$1" in
    --put-back) put_back="${2:?--put-back needs filter, tensorboard, grader or min-tokens}"; shift 2 ;;
    --modes) modes="${2:?--modes needs a list}"; shift 2 ;;
    *) die "unknown argument $1" ;;
  esac
done
[ -f "$checkout/marti/cli/commands/train.py" ] || die "$checkout: no marti/cli/commands/train.py; pass a checkout of ltjed/multiagent-coaching"
for v in HYDRA_SRC OMEGACONF_SRC TENSORBOARD_SRC; do
  [ -n "${!v:-}" ] && [ -d "${!v}" ] || die "$v: set it to the source tree (docs/cli.md, \"Dry run through their code\")"
done
[ -f "$HYDRA_SRC/hydra/grammar/gen/OverrideParser.py" ] || die "HYDRA_SRC: hydra/grammar/gen/OverrideParser.py missing; generate the parsers with ANTLR 4.9.3"
[ -f "$OMEGACONF_SRC/omegaconf/grammar/gen/OmegaConfGrammarParser.py" ] || die "OMEGACONF_SRC: omegaconf/grammar/gen missing; generate the parsers"
[ -f "$TENSORBOARD_SRC/tensorboard/compat/proto/event_pb2.py" ] || die "TENSORBOARD_SRC: tensorboard/compat/proto/event_pb2.py missing; run protoc"
/usr/bin/python3 -c "import torch, antlr4, yaml, jinja2, sympy, regex, pylatexenc, dotenv, srsly, json5, numpy, requests, tqdm, absl" \
  || die "/usr/bin/python3 lacks a Debian package listed at the top of this script"

work="$(mktemp -d "${TMPDIR:-/tmp}/marti-dry-run.XXXXXX")"
echo "marti-dry-run: working in $work (their checkout $(git -C "$checkout" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
status=0
for mode in $modes; do
  export_dir="$work/export-$mode"
  echo "{\"rewards\": {\"mode\": \"$mode\"}}" > "$work/config-$mode.json"
  (cd "$root" && node bin/mappa.js export --target marti --config "$work/config-$mode.json" --out "$export_dir" >/dev/null 2>&1) \
    || die "mappa export failed for mode $mode"
  copy="$work/marti-$mode"
  mkdir -p "$copy" && (cd "$checkout" && tar --exclude=.git -cf - .) | (cd "$copy" && tar -xf -)
  # README step 1: the base model (its config and tokenizer; the stand-ins read no weights) and the stop settings.
  mkdir -p "$export_dir/models/base"
  for f in config.json tokenizer.json tokenizer_config.json; do cp "$root/models/agent/$f" "$export_dir/models/base/"; done
  cp "$export_dir/generation_config.json" "$export_dir/models/base/"
  # README step 3, from their repository root.
  (cd "$copy" && EXPORT="$export_dir" && cp "$EXPORT/mappa_mathchat.yaml" marti/cli/configs/ \
    && mkdir -p data/mappa models/mappa && cp "$EXPORT"/*.jsonl "$EXPORT"/*.py "$EXPORT/code_interpreter.json" data/mappa/ \
    && cp -r "$EXPORT"/models/* models/mappa/)
  # README step 4: absolute paths.
  (cd "$copy" && sed -i -E "s#(: \"?)\./#\1$PWD/#" marti/cli/configs/mappa_mathchat.yaml)
  log="$work/dry-run-$mode${put_back:+-$put_back}.log"
  set +e
  (cd "$copy" && PYTHONPATH="$HYDRA_SRC:$OMEGACONF_SRC:$TENSORBOARD_SRC" timeout 1200 /usr/bin/python3 "$here/marti-dry-run.py" \
    --mode "$mode" ${put_back:+--put-back "$put_back"} -- default_agent.max_samples=24) > "$log" 2>&1
  rc=$?
  set -e
  grep -E "^\[dry-run\]|^\[filter_agents_data\]|^[A-Za-z]*Error: " "$log" | tail -n 40
  echo "marti-dry-run: mode $mode exit $rc (full log: $log)"
  [ $rc -eq 0 ] || status=1
done
exit $status
