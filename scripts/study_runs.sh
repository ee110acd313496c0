#!/usr/bin/env bash
# Train and score the named runs of the Multi30k study that $STUDY_RESULTS does not hold yet,
# then copy each finished run's per-line files there (lines/<set>/<run>.json.gz) with its
# training record (training/<run>.json): a sitting that stops early loses no finished run, and the
# next one trains only what is missing (an interrupted run continues from its last.pt while
# $STUDY_DIR is kept). make study-meanpool and make study-confirm call it.
#   usage: scripts/study_runs.sh SEEDS NEGATIVE_SEEDS TEST[,TEST...] RUN...
#   env: SEQ2SEQ, PYTHON, STUDY_DIR (where runs train), STUDY_RESULTS, STUDY_JOBS, STEPS (the
#        compare options of the recipe), SEQ2SEQ_DATA_DIR
set -euo pipefail
if [ "$#" -lt 4 ]; then
  echo "usage: scripts/study_runs.sh SEEDS NEGATIVE_SEEDS TEST[,TEST...] RUN... (make study-confirm)" >&2
  exit 2
fi
seeds=$1 negative=$2 tests=$3
shift 3
results=${STUDY_RESULTS:?} out=${STUDY_DIR:?}/multi30k
if [ ! -d "$results" ]; then
  echo "error: STUDY_RESULTS=$results is not a folder; give the results folder (docs/results/study/multi30k)" >&2
  exit 2
fi
IFS=, read -r -a sets <<< "$tests"
collect() {  # copy what the study folder finished into $results
  "${PYTHON:?}" -m seq2seq.study.judge collect "$out" "$results" "$@"
}
collect "$@"
missing=()
for run in "$@"; do
  for set in "${sets[@]}"; do
    if [ ! -f "$results/lines/$set/$run.json.gz" ]; then missing+=("$run"); break; fi
  done
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "== every run is in $results: nothing to train"
  exit 0
fi
echo "== training and scoring ${#missing[@]} runs: ${missing[*]}"
test_args=()
for set in "${sets[@]}"; do test_args+=(--test "multi30k/$set"); done
rc=0
# shellcheck disable=SC2086  # STEPS holds several options
"${SEQ2SEQ:?}" compare configs/study/multi30k/*.yaml --out "$out" ${STEPS:?} \
  --jobs "${STUDY_JOBS:-2}" --seeds "$seeds" --negative-seeds "$negative" "${test_args[@]}" \
  --only "$(IFS=,; echo "${missing[*]}")" || rc=$?
collect "$@"  # also after a stop: whatever finished is kept
exit "$rc"
