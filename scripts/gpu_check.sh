#!/usr/bin/env bash
# GPU check, for a CUDA machine (CI never runs it), one prepared run of about 8 minutes:
#   1. versions and the SDPA backends torch would use;
#   2. scripts/sdpa_bench.py: attention forward+backward with 20 new shapes against one repeated
#      shape, cuDNN SDPA on and off (why train.cudnn_sdp is off by default);
#   3. scripts/bench_train.py, bf16: target tokens/s, model FLOP/s against a bf16 matmul peak measured
#      in the same run (MFU) and peak GPU memory of every CPU-sized config (configs/multi30k/), the
#      small Transformer at 25k-token batches too, and Transformer-base (configs/multi30k-gpu/);
#   4. host syncs in the real training loop, counted with torch.cuda.set_sync_debug_mode;
#   5. the Transformer 30 updates in fp16 with the gradient scaler (it must reach 30);
#   6. Transformer-base trained on Multi30k for GPU_CHECK_TRAIN_MIN minutes (default 3) and scored
#      on test_2016_flickr, greedy and beam 5 (BLEU with signature, chrF);
#   7. a 2-process DistributedDataParallel smoke test (torchrun, NCCL) if two GPUs exist.
# Everything it prints also goes to $GPU_CHECK_OUT (gpu_check.log, gpu_check.json and one JSON a
# step). Installs nothing: it runs this checkout (PYTHONPATH) with the python that has torch.
#
#   scripts/gpu_check.sh [DATA_DIR]     DATA_DIR holds multi30k/ (default: $SEQ2SEQ_DATA_DIR,
#                                       else ../shared/data)
#   PYTHON=/path/python  GPU_CHECK_STEPS=30  GPU_CHECK_TRAIN_MIN=3  GPU_CHECK_OUT=folder
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
OUT_DIR="${GPU_CHECK_OUT:-${TMPDIR:-/tmp}/gpu_check}"

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

export SEQ2SEQ_DATA_DIR="$DATA" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
mkdir -p "$OUT_DIR"
exec > >(tee "$OUT_DIR/gpu_check.log") 2>&1
ngpu=$("$PY" -c 'import torch; print(torch.cuda.device_count())')
work=$(mktemp -d)

# 1) Versions and SDPA backends.
"$PY" - "$OUT_DIR/versions.json" <<'EOF2'
import json, sys, torch
b = torch.backends
v = {
    "gpu": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
    "torch": torch.__version__, "cuda": torch.version.cuda, "cudnn": b.cudnn.version(),
    "sdp_enabled": {"flash": b.cuda.flash_sdp_enabled(), "mem_efficient": b.cuda.mem_efficient_sdp_enabled(),
                    "cudnn": b.cuda.cudnn_sdp_enabled(), "math": b.cuda.math_sdp_enabled()},
}
print("gpu_check:", json.dumps(v))
json.dump(v, open(sys.argv[1], "w"), indent=2)
EOF2

# 2) Attention with varying shapes, cuDNN SDPA on and off.
timeout 120 "$PY" scripts/sdpa_bench.py --device cuda --shapes 20 --json "$OUT_DIR/sdpa.json"

# 3) Training speed, bf16, fixed steps: every CPU-sized config, the small Transformer at 25k-token
#    batches, and Transformer-base.
"$PY" - "$work/transformer_25k.yaml" <<'EOF2'
import sys, yaml
c = yaml.safe_load(open("configs/multi30k/transformer.yaml"))
c["name"] = "multi30k-transformer-25k"
c["train"]["batch_tokens"] = 25000
yaml.safe_dump(c, open(sys.argv[1], "w"))
EOF2
timeout 360 "$PY" scripts/bench_train.py configs/multi30k/*.yaml "$work/transformer_25k.yaml" \
    configs/multi30k-gpu/transformer_base.yaml --device cuda --precisions bf16 \
    --steps "$STEPS" --warmup 5 --budget 30 --scales --json "$OUT_DIR/bench_train.json"

# 4) Host syncs in the real loop: 60 updates, logging every 50 (one log point inside the run).
timeout 240 "$PY" - "$OUT_DIR/syncs.json" "$work/syncs" <<'EOF2'
import json, sys, warnings, torch
from seq2seq.config import load_config
from seq2seq.training.loop import train
cfg = load_config("configs/multi30k/transformer.yaml", [
    "train.max_steps=60", "train.log_every=50", "train.valid_every=1000", "train.valid_bleu=false",
    "train.best_metric=loss", "data.max_train_pairs=20000", "data.max_valid_pairs=200"])
torch.cuda.set_sync_debug_mode("warn")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    summary = train(cfg, sys.argv[2])
torch.cuda.set_sync_debug_mode(0)
syncs = [str(w.message).splitlines()[0] for w in caught if "synchroniz" in str(w.message)]
out = {"steps": summary["steps"], "log_every": 50, "sync_warnings": len(syncs),
       "first": syncs[:10], "target_tokens_per_s": summary.get("target_tokens_per_s")}
print("gpu_check: host syncs over", summary["steps"], "updates (setup, log points and the final "
      "save included):", len(syncs))
json.dump(out, open(sys.argv[1], "w"), indent=2)
EOF2

# 5) fp16 with the gradient scaler through the real training loop: the updates must stay finite.
fp16_dir=$work
timeout 240 "$PY" -m seq2seq train configs/multi30k/transformer.yaml --run-dir "$fp16_dir/fp16" \
    --set train.device=cuda --set train.precision=fp16 --set train.max_steps=30 \
    --set train.valid_every=30 --set train.valid_bleu=false --set train.best_metric=loss \
    --set data.max_train_pairs=5000 --set data.max_valid_pairs=200 > "$OUT_DIR/fp16.json"
"$PY" - "$OUT_DIR/fp16.json" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
ok = s["steps"] == 30  # loss-scale overflows are skipped and counted, as GradScaler does
print(f"gpu_check: fp16 + GradScaler, {s['steps']} updates, {s['nonfinite_skipped']} skipped "
      f"(overflow), {s.get('target_tokens_per_s', 0):,.0f} target tokens/s: "
      + ("ok" if ok else "FAILED"))
sys.exit(0 if ok else 1)
EOF

# 6) Transformer-base on Multi30k for GPU_CHECK_TRAIN_MIN minutes, scored on test_2016_flickr.
MIN="${GPU_CHECK_TRAIN_MIN:-3}"
timeout $((MIN * 60 + 180)) "$PY" -m seq2seq train configs/multi30k-gpu/transformer_base.yaml \
    --run-dir "$work/base" --max-time "$MIN" > "$OUT_DIR/base_train.json"
cat "$OUT_DIR/base_train.json"
test_src="$DATA/multi30k/test_2016_flickr.de.gz"; test_ref="$DATA/multi30k/test_2016_flickr.en.gz"
for beam in 1 5; do
    timeout 120 "$PY" -m seq2seq eval -c "$work/base" --src "$test_src" --ref "$test_ref" \
        --bleu --chrf --beam "$beam" --json "$OUT_DIR/base_test_beam$beam.json"
done

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
"$PY" - "$OUT_DIR" <<'EOF2'
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
parts = {p.stem: json.loads(p.read_text()) for p in sorted(d.glob("*.json")) if p.name != "gpu_check.json"}
(d / "gpu_check.json").write_text(json.dumps(parts, indent=2))
EOF2
rm -rf "$work"
echo "gpu_check: done; numbers in $OUT_DIR/gpu_check.json"
