#!/usr/bin/env bash
# Train every config given (default: configs/multi30k/*.yaml) into runs/multi30k/<name>/ and score
# each on test_2016_flickr, greedy and beam 5, with BLEU by source length. Results:
# runs/multi30k/<name>/test_{greedy,beam5}.json and .hyp.en, plus the train summary.
#   usage: scripts/train_zoo.sh [CONFIG ...]     (env: SEQ2SEQ_DATA_DIR, RUNS, SEQ2SEQ)
set -euo pipefail
data="${SEQ2SEQ_DATA_DIR:-../shared/data}"
runs="${RUNS:-runs/multi30k}"
seq2seq="${SEQ2SEQ:-seq2seq}"
test_prefix="$data/multi30k/test_2016_flickr"
[ "$#" -gt 0 ] || set -- configs/multi30k/*.yaml
for cfg in "$@"; do
  name=$(basename "$cfg" .yaml)
  dir="$runs/$name"
  if [ -f "$dir/last.pt" ]; then
    echo "== $name: $dir already trained, scoring only"
  else
    echo "== $name: training ($cfg)"
    $seq2seq train "$cfg" --run-dir "$dir" > "$dir.summary.json"
    mv "$dir.summary.json" "$dir/train_summary.json"
  fi
  for beam in 1 5; do
    tag=$([ "$beam" = 1 ] && echo greedy || echo "beam$beam")
    $seq2seq eval -c "$dir" --src "$test_prefix.de.gz" --ref "$test_prefix.en.gz" --beam "$beam" \
      --bleu --chrf --by-length --output "$dir/test_$tag.hyp.en" --json "$dir/test_$tag.json"
  done
done
