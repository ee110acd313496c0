#!/usr/bin/env bash
# Train every config given (default: configs/multi30k/*.yaml) into runs/multi30k/<name>/ and score
# each on test_2016_flickr, greedy and beam 5, with BLEU by source length. Results:
# runs/multi30k/<name>/test_{greedy,beam5}.json and .hyp.en, beside train's own
# train_summary.json and train.log. The test files are test_2016_flickr.de / .en (the Multi30k
# de->en configs). A run stopped with Ctrl-C is not scored: run the script again and it resumes.
#   usage: scripts/train_zoo.sh [CONFIG ...]     (env: SEQ2SEQ_DATA_DIR, RUNS, SEQ2SEQ)
set -euo pipefail
data="${SEQ2SEQ_DATA_DIR:-../shared/data}"
runs="${RUNS:-runs/multi30k}"
seq2seq="${SEQ2SEQ:-seq2seq}"
test_prefix="$data/multi30k/test_2016_flickr"
test_file() { for f in "$test_prefix.$1" "$test_prefix.$1.gz"; do [ -f "$f" ] && { echo "$f"; return; }; done
  echo "error: $test_prefix.$1[.gz] not found: set SEQ2SEQ_DATA_DIR or run scripts/get_multi30k.sh" >&2
  exit 2; }
test_src=$(test_file de)
test_ref=$(test_file en)
[ "$#" -gt 0 ] || set -- configs/multi30k/*.yaml
for cfg in "$@"; do
  name=$(basename "$cfg" .yaml)
  dir="$runs/$name"
  mkdir -p "$runs"
  # train writes $dir/train_summary.json itself (a resume rewrites it, its times summed over
  # every stretch); its stdout copy is not needed here
  rc=0
  if [ -f "$dir/last.pt" ]; then
    # a finished run stops at once; an interrupted one goes on to its budget
    echo "== $name: resuming $dir"
    $seq2seq train "$cfg" --resume "$dir" > /dev/null || rc=$?
  else
    echo "== $name: training ($cfg)"
    $seq2seq train "$cfg" --run-dir "$dir" > /dev/null || rc=$?
  fi
  if [ "$rc" = 130 ]; then  # Ctrl-C or SIGTERM: last.pt saved
    echo "== $name: interrupted; run the same command again to resume it (nothing scored)" >&2
    exit 130
  elif [ "$rc" != 0 ]; then
    exit "$rc"
  fi
  for beam in 1 5; do
    tag=$([ "$beam" = 1 ] && echo greedy || echo "beam$beam")
    echo "== $name: test_2016_flickr, $tag"  # --beam 1 is greedy search, recorded as greedy
    $seq2seq eval -c "$dir" --src "$test_src" --ref "$test_ref" --beam "$beam" \
      --bleu --chrf --by-length --output "$dir/test_$tag.hyp.en" --json "$dir/test_$tag.json"
  done
done
