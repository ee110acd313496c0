#!/usr/bin/env bash
# GPU check, for a CUDA machine (CI never runs it; 201 s on one H200, measured 2026-11-30):
#   1. trains every model family (configs/multi30k/*.yaml) for a fixed number of steps on CUDA in
#      bf16 on Multi30k, through scripts/bench_train.py, and prints target tokens/s, achieved model
#      FLOP/s against a bf16 matmul peak measured in the same run, and peak GPU memory;
#   2. trains the Transformer 30 updates in fp16 with the gradient scaler (it must reach 30);
#   3. runs a 2-process DistributedDataParallel smoke test (torchrun, NCCL) if two GPUs exist.
# Installs nothing: it runs this checkout (PYTHONPATH) with the python that has torch.
#
#   scripts/gpu_check.sh [DATA_DIR]     DATA_DIR holds multi30k/ (default: $SEQ2SEQ_DATA_DIR,
#                                       else ../shared/data)
#   PYTHON=/path/python  GPU_CHECK_STEPS=30  GPU_CHECK_OUT=folder (for gpu_check.json)
#
# Fails fast, with one line and exit code 2, without CUDA, a needed package or the data.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "gpu_check: $*" >&2
    exit 2
}

PY="${PYTHON:-python3}"
DATA="${1:-${SEQ2SEQ_DATA_DIR:-../shared/data}}"
STEPS="${GPU_CHECK_STEPS:-30}"
OUT_DIR="${GPU_CHECK_OUT:-${TMPDIR:-/tmp}}"

# 1) CUDA first, so a CPU machine stops at once.
cuda=$("$PY" -c 'import torch; print(int(torch.cuda.is_available()), torch.__version__)' 2>/dev/null) \
    || fail "$PY cannot import torch; set PYTHON to the interpreter that has a CUDA build of torch"
[ "${cuda%% *}" = 1 ] \
    || fail "no CUDA device visible to torch ${cuda#* } on $(hostname); run this on a CUDA machine"

# 2) The packages seq2seq needs for training (not fetched here: install them offline first).
missing=$("$PY" - <<'EOF'
import importlib.util
need = ["numpy", "sentencepiece", "pydantic", "yaml", "sacrebleu", "typer", "rich", "tensorboard", "matplotlib"]
print(" ".join(n for n in need if importlib.util.find_spec(n) is None))
EOF
)
[ -z "$missing" ] || fail "missing Python packages: $missing (install wheels offline: pip install --no-index --find-links WHEELS_DIR ...)"

# 3) Multi30k.
[ -e "$DATA/multi30k/train.de.gz" ] || [ -e "$DATA/multi30k/train.de" ] \
    || fail "Multi30k not found in $DATA/multi30k: pass its parent folder as the first argument"

export SEQ2SEQ_DATA_DIR="$DATA" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
"$PY" -c 'import torch; print("gpu_check:", torch.cuda.device_count(), "x", torch.cuda.get_device_name(0), "| torch", torch.__version__)'

# 4) Every model family, bf16, fixed steps: tokens/s, model FLOP/s vs bf16 matmul peak, GPU memory.
mkdir -p "$OUT_DIR"
timeout 420 "$PY" scripts/bench_train.py configs/multi30k/*.yaml --device cuda --precisions bf16 \
    --steps "$STEPS" --warmup 5 --budget 30 --scales --json "$OUT_DIR/gpu_check.json"

# 5) fp16 with the gradient scaler through the real training loop: the updates must stay finite.
fp16_dir=$(mktemp -d)
timeout 240 "$PY" -m seq2seq train configs/multi30k/transformer.yaml --run-dir "$fp16_dir/fp16" \
    --set train.device=cuda --set train.precision=fp16 --set train.max_steps=30 \
    --set train.valid_every=30 --set train.valid_bleu=false --set train.best_metric=loss \
    --set data.max_train_pairs=5000 --set data.max_valid_pairs=200 > "$fp16_dir/summary.json"
"$PY" - "$fp16_dir/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
ok = s["steps"] == 30  # loss-scale overflows are skipped and counted, as GradScaler does
print(f"gpu_check: fp16 + GradScaler, {s['steps']} updates, {s['nonfinite_skipped']} skipped "
      f"(overflow), {s.get('target_tokens_per_s', 0):,.0f} target tokens/s: "
      + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
EOF

# 6) DDP smoke test: two ranks train a few steps; both must end with the same weights.
if [ "$ngpu" -ge 2 ]; then
    run_dir=$(mktemp -d)
    timeout 240 "$PY" -m torch.distributed.run --standalone --nproc_per_node 2 \
        -m seq2seq train configs/multi30k/transformer.yaml --run-dir "$run_dir/ddp" \
        --set train.device=cuda --set train.precision=bf16 --set train.max_steps=20 \
        --set train.valid_every=20 --set train.valid_bleu=false --set train.best_metric=loss \
        --set data.max_train_pairs=5000 --set data.max_valid_pairs=200 > "$run_dir/summary.json"
    "$PY" - "$run_dir/summary.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
d = s.get("rank_weights_sha256", [])
same = len(d) == 2 and d[0] == d[1]
print(f"gpu_check: DDP smoke test, 2 ranks, {s['steps']} steps, "
      f"{s.get('target_tokens_per_s', 0):,.0f} target tokens/s: "
      + ("both ranks hold identical weights" if same else f"RANKS DIFFER: {d}"))
sys.exit(0 if same else 1)
EOF
else
    echo "gpu_check: DDP smoke test skipped: $ngpu GPU (needs 2)"
fi
echo "gpu_check: done; numbers in $OUT_DIR/gpu_check.json"
