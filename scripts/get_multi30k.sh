#!/usr/bin/env bash
# Fetch Multi30k task 1 (raw, gzipped) from the official repository into DIR/multi30k/, the layout
# the configs expect. Then: export SEQ2SEQ_DATA_DIR=DIR
#   usage: scripts/get_multi30k.sh [DIR]     (default DIR: ../shared/data)
set -euo pipefail
dir="${1:-../shared/data}/multi30k"
base="https://github.com/multi30k/dataset/raw/master/data/task1/raw"
mkdir -p "$dir"
for split in train val test_2016_flickr test_2017_flickr; do
  for lang in de en fr; do
    f="$split.$lang.gz"
    [ -s "$dir/$f" ] && continue
    echo "fetching $f"
    curl -fsSL --retry 3 -o "$dir/$f.part" "$base/$f" && mv "$dir/$f.part" "$dir/$f"
  done
done
echo "Multi30k is in $dir; export SEQ2SEQ_DATA_DIR=$(cd "$dir/.." && pwd)"
