# Two commands on a fresh clone: `make demo` (train + translate + score on Multi30k) and `make test`
# (`make test-fast` for the fast tier alone).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
DATA   ?= $(or $(SEQ2SEQ_DATA_DIR),../shared/data)
RUNS   ?= runs
TORCH_PIN := torch==2.13.0

.PHONY: install demo demo-rnn demo-record zoo best test test-fast test-slow test-browser lint format bench-train profile-train bench-steady bench-compile bench-decode study study-quick study-seeds study-families study-meanpool study-confirm study-verdict study-rescore clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# torch goes first, pinned, and only when the environment has none: a plain `torch` requirement
# would pull a multi-GB CUDA build, and a user's own torch build is never replaced. The `export`
# extra (ctranslate2, a 43 MB wheel) follows on its own, so a platform without its wheel still
# installs; the tests that need it then skip and say why.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -c "import torch" 2>/dev/null || $(BIN)/python -m pip install "$(TORCH_PIN)"
	$(BIN)/python -m pip install -e ".[dev]"
	$(BIN)/python -m pip install -e ".[export]" || echo "ctranslate2 not installed: its tests skip"
	touch $@

install: $(VENV)/.installed

# The main job: train Bahdanau attention on Multi30k de->en (20 minutes on 2 CPU cores), then score
# test_2016_flickr greedy and with beam 5 (BLEU with its signature, chrF, BLEU by source length).
# Run again, it resumes an interrupted run or just re-scores a finished one.
demo: install
	SEQ2SEQ_DATA_DIR=$(DATA) SEQ2SEQ=$(BIN)/seq2seq RUNS=$(RUNS)/multi30k scripts/train_zoo.sh configs/multi30k/bahdanau.yaml

# After `make demo` has finished, on the machine that ran it: keep its numbers as this CPU kind's
# record (docs/results/demo/<kind>.json) and render the demo table of docs/results/README.md from
# every record there (scripts/demo_report.py); commit both.
demo-record: install
	$(BIN)/python scripts/demo_report.py record $(RUNS)/multi30k/bahdanau --write docs/results/README.md

# The same for the fixed-vector bottleneck, for comparison.
demo-rnn: install
	SEQ2SEQ_DATA_DIR=$(DATA) SEQ2SEQ=$(BIN)/seq2seq RUNS=$(RUNS)/multi30k scripts/train_zoo.sh configs/multi30k/rnn.yaml

# Every model of the zoo (configs/multi30k/*.yaml, 20 minutes each on 2 CPU cores), scored on
# test_2016_flickr greedy and with beam 5, BLEU by source length: runs/multi30k/<name>/test_*.json
zoo: install
	SEQ2SEQ_DATA_DIR=$(DATA) SEQ2SEQ=$(BIN)/seq2seq RUNS=$(RUNS)/multi30k scripts/train_zoo.sh $(ZOO_CONFIGS)

# Tests in tiers, one folder each. `make test` runs everything but the `slow` checks (what CI runs;
# Multi30k from $(DATA); in TEST_JOBS pytest-xdist workers, one torch thread each; under 10 minutes
# on 2 CPU cores; it names its 15 slowest tests).
# `make test-fast` is the fast tier alone (tests/unit/): models, search, config, data hygiene and
# metrics on synthetic data, no corpus, under a minute, in TEST_JOBS pytest-xdist workers; it
# leaves out the end-to-end tier (tests/e2e/, every test there marked `e2e`: training, resume, DDP,
# the CLI in subprocesses, the study).
# `make test-slow` runs the long checks.
TEST_JOBS ?= 2
test: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python -m pytest -q -n $(TEST_JOBS) --durations=15

test-fast: install
	$(BIN)/python -m pytest -q -n $(TEST_JOBS) -m "not e2e and not slow and not browser"

test-slow: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python -m pytest -q -m slow

# The `seq2seq serve` page in a real headless Chromium: Debian's `chromium` package (apt-get install
# chromium), or the binary $SEQ2SEQ_CHROMIUM names. Playwright comes from the `browser` extra and
# drives that browser; it never downloads one. See docs/serve.md.
$(VENV)/.browser: pyproject.toml | $(VENV)/.installed
	$(BIN)/python -m pip install -e ".[dev,browser]"
	touch $@

test-browser: install $(VENV)/.browser
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python -m pytest -q -rP -m browser

lint: install
	$(BIN)/ruff check seq2seq tests scripts
	$(BIN)/ruff format --check seq2seq tests scripts

format: install
	$(BIN)/ruff format seq2seq tests scripts
	$(BIN)/ruff check --fix seq2seq tests scripts

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache

# Decode speed and quality on test_2016_flickr, greedy vs beam:
#   make bench-decode BENCH_RUNS="runs/multi30k/bahdanau runs/multi30k/rnn"
# (a folder of runs benchmarks each run inside it; default every run in runs/multi30k). Prints a
# table, writes $(BENCH_DECODE_JSON). BENCH_DECODE_ARGS="--quantize int8" adds int8 weights
# against fp32 (sentences/s and BLEU side by side).
BENCH_RUNS        ?= $(RUNS)/multi30k
BENCH_BATCH       ?= 64
BENCH_DECODE_JSON ?= runs/bench_decode.json
BENCH_DECODE_ARGS ?=
bench-decode: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/bench_decode.py $(BENCH_RUNS) \
		--batch-size $(BENCH_BATCH) $(BENCH_DECODE_ARGS) --json $(BENCH_DECODE_JSON)

# Training speed on this machine: per config (CONFIGS, default configs/multi30k/*.yaml) target
# tokens/s, peak memory and model FLOP/s vs a matmul peak, in fp32 and bf16; then peak memory with
# Multi30k x1 and x10 through the arrow and memory backends. Needs the quiet machine (it waits
# while /tmp/seq2seq.measuring exists). Prints a table, writes $(BENCH_TRAIN_JSON).
CONFIGS          ?= $(wildcard configs/multi30k/*.yaml)
BENCH_TRAIN_ARGS ?=
BENCH_TRAIN_JSON ?= runs/bench_train.json
bench-train: install
	mkdir -p $(dir $(BENCH_TRAIN_JSON))
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/bench_train.py $(CONFIGS) $(BENCH_TRAIN_ARGS) \
		--json $(BENCH_TRAIN_JSON)

# Where a training step's time goes: torch.profiler over PROFILE_CONFIGS' bf16 steps (default the
# zoo Transformer and bahdanau), each op's self time summed into kinds (matmul, attention, softmax
# and loss, optimizer, norms, dropout, casts, elementwise) plus the time between ops. Quiet machine.
PROFILE_CONFIGS ?= configs/multi30k/transformer.yaml configs/multi30k/bahdanau.yaml
PROFILE_ARGS    ?=
profile-train: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/profile_train.py $(PROFILE_CONFIGS) $(PROFILE_ARGS)

# Training speed over a run, not its first steps (bf16, 400 updates of the epoch's batches in order,
# target tokens/s per 50, resident high-water mark), with oneDNN's default primitive cache (1024)
# and the 16384 that `import seq2seq` sets. Quiet machine. Same configs as profile-train.
STEADY_ARGS ?=
bench-steady: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/bench_steady.py $(PROFILE_CONFIGS) $(STEADY_ARGS)

# torch.compile of the zoo Transformer's step at one static batch shape against eager (bf16, one
# batch repeated, each mode in a fresh process, compile time apart): the upper bound for a
# compiled step. Quiet machine.
COMPILE_ARGS ?=
bench-compile: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/bench_compile.py $(COMPILE_ARGS)

# The bottleneck-versus-attention study, synthetic half (`make study-quick`, 13 minutes from a clean
# clone on a 2-core CPU, install included, measured; its four trainings run STUDY_JOBS at a time,
# one torch thread each): reversal of 1-30 symbols (20 of them) by
# four models of matched size (parameters within 10% of one another): the fixed-vector rnn,
# bahdanau, luong and a pre-norm transformer (configs/study/reverse/, from
# configs/study/reverse_task.yaml). Each trains until its validation loss stops improving (early
# stopping after three stalls; the rnn's and transformer's learning rate halves after two, the
# others' decays along a cosine) or to its own cap of updates: rnn 2500, transformer 2000,
# bahdanau and luong 600. Then, on the test set: exact match by length (greedy), alignment
# accuracy of every attention model (teacher forced; the transformer per layer and head), and a
# plateau check: each model's exact match on validation lines of 1-10 symbols at
# its last five validations, so an undertrained rnn is named rather than read as the bottleneck.
# Report: $(STUDY_DIR)/reverse/report.md, results.json; finished runs are reused on a rerun.
STUDY_DIR           ?= $(RUNS)/study
STUDY_CONFIGS       ?= configs/study
STUDY_ARGS          ?=
study-quick: install
	$(BIN)/seq2seq synth --task reverse --n 20000 --min-len 1 --max-len 30 --vocab 20 \
		--out runs/synth/reverse30 --overwrite
	$(BIN)/seq2seq compare $(STUDY_CONFIGS)/reverse/*.yaml --out $(STUDY_DIR)/reverse \
		--concat-k 1 --beams 1 --buckets 10,20,30 --alignment reverse --jobs $(STUDY_JOBS) \
		--device $(STUDY_DEVICE) $(STUDY_ARGS)

# The whole study: the synthetic half above, then Multi30k: RNNsearch (bahdanau) against its own
# ablation with one fixed context (rnnencdec), and the plain fixed-vector rnn as a negative
# control (configs/study/multi30k/: the zoo configs plus the study's data). Every model trains
# with one recipe, the same updates for all: STUDY_SINGLE_STEPS on single pairs (its config's
# peak learning rate along a cosine to a tenth over three quarters of them, held for the last),
# then STUDY_JOINED_STEPS from that checkpoint on single plus joined pairs (k = 2..4), from half
# the peak along a cosine to 0 (the pilots behind them: docs/results/study/pilot.md); STUDY_JOBS at
# a time, one torch thread each;
# each scored in its worker as soon as it is trained: test_2016_flickr joined k = 1..4 at a time,
# greedy and beam 5 at the length penalty best on validation, and rho (the share of what a
# caption's source tells the model that survives the join). The report gives rho by k of each
# model and every run's rho difference against the ablation of its seed, with paired-bootstrap
# intervals; no verdict (that is rule v3's, make study-verdict, below). Finished runs under
# $(STUDY_DIR) are reused on a rerun; a run stopped by Ctrl-C or kill continues from its last.pt.
# study-seeds adds seeds 2 and 3 of the pair; study-families adds rnn_context,
# luong_dot/general/concat and transformer (configs/study/families/) beside the same ablation
# and rewrites the report with them. On a GPU the same recipe and batch sizes:
#   make study study-seeds STUDY_DIR=runs/study-gpu STUDY_JOBS=1 STUDY_DEVICE=cuda
# Reports: $(STUDY_DIR)/{reverse,multi30k}/report.md, results.json, rho_by_k.png, lines/.
STUDY_SINGLE_STEPS ?= 1400
STUDY_JOINED_STEPS ?= 200
STUDY_JOBS         ?= 2
STUDY_SEEDS        ?= 1,2,3
STUDY_DEVICE       ?= auto
STUDY_M30K = SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/seq2seq compare $(STUDY_CONFIGS)/multi30k/*.yaml \
	--out $(STUDY_DIR)/multi30k --single-steps $(STUDY_SINGLE_STEPS) \
	--joined-steps $(STUDY_JOINED_STEPS) --jobs $(STUDY_JOBS) --device $(STUDY_DEVICE)
study: study-quick
	$(STUDY_M30K) $(STUDY_ARGS)
study-seeds: install
	$(STUDY_M30K) --seeds $(STUDY_SEEDS) $(STUDY_ARGS)
study-families: install
	$(STUDY_M30K) $(STUDY_CONFIGS)/families/*.yaml --seeds $(STUDY_SEEDS) $(STUDY_ARGS)

# Rule v3 (seq2seq/study/verdict_v3.py; docs/results/study/multi30k/verdict.md) is judged once,
# on seeds and a test set no run of the study has seen. study-meanpool trains the mean-pool
# fixed-vector design (configs/study/multi30k/meanpool.yaml) at seeds 1-3 and scores it on
# test_2016_flickr and test_2017_flickr: data seen, which chose rule v3's margins. study-confirm
# (only once the rule is frozen) trains seeds 7, 8 and 9 of bahdanau, rnnencdec, rnn and the
# mean-pool with the unchanged recipe, STUDY_JOBS at a time, and scores them on
# test_2018_flickr (judged) and test_2016/2017 (shown). Both keep each finished run's per-line
# files in STUDY_RESULTS at once (scripts/study_runs.sh) and train only what is missing there,
# so they can be spread over several sittings (about 400 CPU-minutes for study-confirm; an
# interrupted run continues from its last.pt while STUDY_DIR is kept). study-verdict writes
# rule v3's report from STUDY_RESULTS' per-line files alone (the test sets' references from DATA).
# study-rescore scores the finished runs of seeds 1-3 again (--score-only: nothing is trained),
# writing the per-line files (lines/<set>/<model>.json.gz) every statistic is computed from.
STUDY_RESULTS ?= docs/results/study/multi30k
STUDY_RUNS = SEQ2SEQ_DATA_DIR=$(DATA) SEQ2SEQ=$(BIN)/seq2seq PYTHON=$(BIN)/python \
	STUDY_DIR=$(STUDY_DIR) STUDY_RESULTS=$(STUDY_RESULTS) STUDY_JOBS=$(STUDY_JOBS) \
	STEPS="--single-steps $(STUDY_SINGLE_STEPS) --joined-steps $(STUDY_JOINED_STEPS) \
	--device $(STUDY_DEVICE)" scripts/study_runs.sh
# in this order, two at a time: the shorter fixed-vector runs first, so a sitting keeps whole runs
CONFIRM = $(foreach s,7 8 9,$(foreach d,rnnencdec rnn meanpool bahdanau,study-$(d)-seed$(s)))
study-meanpool: install
	$(STUDY_RUNS) 1,2,3 2,3 test_2016_flickr,test_2017_flickr \
		study-meanpool study-meanpool-seed2 study-meanpool-seed3
	$(MAKE) study-verdict
study-confirm: install
	@$(BIN)/python -c "from seq2seq.study import verdict_v3 as v; v.DELTA or exit(\
	'study-confirm: rule v3 is not frozen (seq2seq/study/verdict_v3.py); nothing is trained')"
	$(STUDY_RUNS) 7,8,9 7,8,9 test_2018_flickr,test_2016_flickr,test_2017_flickr $(CONFIRM)
	$(MAKE) study-verdict
study-verdict: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python -m seq2seq.study.judge verdict $(STUDY_RESULTS)
study-rescore: install
	$(STUDY_M30K) --seeds $(STUDY_SEEDS) --score-only $(STUDY_ARGS)

# Converged models: train each family in BEST to convergence (early stopping, at most
# 100 minutes each on 2 CPU cores; configs/multi30k/best/), choose best.pt or a checkpoint average
# on validation, tune beam size and length penalty on validation (seq2seq tune-decode), then score
# test_2016_flickr and test_2017_flickr greedy and tuned: runs/best/README.md. Resumable: run it
# again to continue (a run trained further, or a new grid, is chosen/tuned/scored again).
# BEST_JOBS=2 trains two families side by side with one thread each.
# BEST_BEAMS and BEST_ALPHAS set the grid tune-decode sweeps (each setting decodes validation once;
# a best setting at the grid's top edge is swept beyond).
BEST        ?= transformer luong_concat
BEST_JOBS   ?= 1
BEST_BEAMS  ?= 5,10
BEST_ALPHAS ?= 0,0.5,1,1.5,2
best: install
	SEQ2SEQ_DATA_DIR=$(DATA) $(BIN)/python scripts/best.py --runs $(RUNS)/best --jobs $(BEST_JOBS) \
		--beams $(BEST_BEAMS) --alphas $(BEST_ALPHAS) $(BEST)
