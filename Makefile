# interp: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
VENV  := .venv
BIN   := $(VENV)/bin
STAMP := $(VENV)/.interp-setup
DEMO_STAMP := $(VENV)/.interp-setup-demo

.PHONY: setup demo test test-fast test-slow lint docs bench accept costs costs-make frontier clean

# Everything from nothing: venv, dependencies and dev tools, both embedded models
# converted, corpus, Chromium. After `make demo` it does only the rest.
setup: $(STAMP)
$(STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh full
	touch $@ $(DEMO_STAMP)

# What the demo needs and no more: venv, torch, interp's runtime dependencies and the
# default model's GGUF (converted by its first load). Under 3 minutes from nothing.
.PHONY: setup-demo
setup-demo: $(DEMO_STAMP)
$(DEMO_STAMP): pyproject.toml scripts/setup.sh
	bash scripts/setup.sh demo
	touch $@

# The main job: logit lens on the embedded model, table on stdout, report in demo-out/.
demo: setup-demo
	$(BIN)/interp lens "The capital of France is" --out demo-out

# The whole suite, set up from nothing. CI runs exactly this: lint, the fast tier
# (tests/unit/, tests/browser/), then the slow tier (tests/integration/, the real models),
# each with its slowest tests listed.
# Each tier runs on TEST_WORKERS processes (pytest-xdist; tests/conftest.py gives each its
# share of the cores and keeps the tests of one costly fixture on one worker).
TEST_WORKERS ?= 2
PYTEST_FAST := $(BIN)/python -m pytest -q --durations=25 -n $(TEST_WORKERS) --dist loadgroup
PYTEST_SLOW := $(BIN)/python -m pytest -m slow -q --durations=25 -n $(TEST_WORKERS) \
	--dist loadgroup
# The slow tier checks the site `make docs` has just built (INTERP_DOCS_SITE), as it is.
test: setup lint docs
	$(PYTEST_FAST)
	INTERP_DOCS_SITE=$(DOCS_OUT) $(PYTEST_SLOW)

# One tier alone (a bare `pytest` is the fast tier: pyproject's addopts say -m "not slow").
test-fast: setup
	$(PYTEST_FAST)

test-slow: setup
	$(PYTEST_SLOW)

# ruff, pyright (basic) on the four packages, and the import contracts (.importlinter).
lint: setup
	$(BIN)/ruff check .
	$(BIN)/basedpyright
	$(BIN)/lint-imports

# The documentation site (docs/, Sphinx + MyST-NB): the pages, the API reference from the
# docstrings and the tutorials, executed (cached by their source in docs/_build/), into
# docs/_build/html/ (open index.html; it works from the folder). Strict: any warning, broken
# link or unresolved reference fails the build. The notebook pages are executed first, one
# per core at a time (scripts/execute_docs.py), into the cache the build then reads.
DOCS_OUT := docs/_build/html
docs: setup
	$(BIN)/python scripts/execute_docs.py
	$(BIN)/sphinx-build -W --keep-going -n -q -b html docs $(DOCS_OUT)
	@echo "docs: $(DOCS_OUT)/index.html"

bench: setup
	$(BIN)/python bench/capture.py
	$(BIN)/python bench/generate.py
	$(BIN)/python bench/probe.py
	$(BIN)/python bench/steering.py
	$(BIN)/python bench/patching.py
	$(BIN)/python bench/das.py
	$(BIN)/python bench/models.py
	$(BIN)/python bench/mfu.py
	$(BIN)/python bench/tuned_lens.py
	$(BIN)/python bench/sae.py throughput
	$(BIN)/python bench/sae.py throughput --arch topk
	$(BIN)/python bench/sae.py layers
	$(BIN)/python bench/sae.py memory
	$(BIN)/python bench/sae_eval.py

# Long runs that reproduce the issues' target figures (minutes; not part of `make test`).
# The tuned lens trains for about 10 minutes on 2 shared cores (≤ 30 min is the target).
TUNED_LENS_TOKENS ?= 10240
# The layer-6 SAE (d_sae 4608) trains for about 30 minutes here (≤ 45 min is the target).
SAE_TOKENS ?= 3000000
SAE_L1 ?= 4
# The automatic-interpretation figures (issue 32) take about 2 hours of the run: 214
# features × 2 explainers × 2 methods × 2 language-model scorers, true and shuffled.
# The CLI fuzzing in depth: every case run to its end (about 5 minutes per example of
# every option on 2 cores).
FUZZ_EXAMPLES ?= 4
# Issue 31: transcoders at all 30 layers from one pass, a 20-token graph, the task checks.
TRANSCODER_TOKENS ?= 1000000
TRANSCODER_LR ?= 4e-3
GRAPH_PROMPT ?= When the early morning train finally arrived at the crowded station, the tired conductor handed the ticket to the
accept: setup
	INTERP_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) INTERP_FUZZ_DEEP=1 INTERP_FUZZ_CASE_SECONDS=60 \
		$(PYTEST_FAST) tests/unit/interp/test_cli_fuzz.py
	$(BIN)/interp probe --layers all --out accept-out/capitals
	$(BIN)/interp probe --dataset datasets/probes/sentiment.jsonl --layer 24 --ablate \
		--out accept-out/sentiment
	$(BIN)/interp probe --layer 6 --ablate --out accept-out/layer6
	$(BIN)/interp steer sweep --pairs datasets/steering/sentiment.jsonl \
		--layers 2,6,10,14,18 --alphas=-1,0,2,4,8,16 --out accept-out/steer
	$(BIN)/interp tuned-lens train --tokens $(TUNED_LENS_TOKENS) --out accept-out/tuned-lens-run
	$(BIN)/interp tuned-lens eval --lens accept-out/tuned-lens-run --tokens 8192 \
		--out accept-out/tuned-lens
	$(BIN)/interp sae train --layer 6 --d-sae 4608 --l1 $(SAE_L1) --tokens $(SAE_TOKENS) \
		--out accept-out/sae-run
	$(BIN)/interp sae eval accept-out/sae-run --out accept-out/sae
	$(BIN)/interp sae browse accept-out/sae-run --out accept-out/sae-browser
	$(BIN)/interp patch --task ioi --family heads --method both --limit 100 \
		--out accept-out/patch-ioi-heads
	$(BIN)/interp patch --task capitals --family resid --method both --limit 100 \
		--out accept-out/patch-capitals-resid
	$(BIN)/python scripts/atp_vs_exact.py --limit 24 --out accept-out/atp-vs-exact
	$(BIN)/interp causal das --task pronoun --layers 8,16 --position name --limit 80 \
		--out accept-out/das-pronoun
	$(BIN)/interp causal das --task capitals --layers 10,18,22 --position country \
		--limit 120 --out accept-out/das-capitals
	$(BIN)/interp causal edges --task ioi --limit 100 --out accept-out/edges-ioi
	$(BIN)/interp sae train --layer 6 --d-sae 4608 --arch topk --k 32 --tokens 600000 \
		--lr 1e-3 --out accept-out/sae-topk
	$(BIN)/interp sae explain accept-out/sae-topk --features alive:200 --explainer self \
		--scorer programmatic,self,gemma3-270m --batch-size 32 --out accept-out/autointerp
	$(BIN)/interp transcoder train --layers all --d-sae 4608 --k 32 \
		--tokens $(TRANSCODER_TOKENS) --lr $(TRANSCODER_LR) --windows-per-chunk 256 \
		--out accept-out/transcoders
	$(BIN)/interp transcoder eval accept-out/transcoders --out accept-out/transcoders-eval
	$(BIN)/interp graph "$(GRAPH_PROMPT)" --transcoders accept-out/transcoders \
		--out accept-out/graph
	for task in capitals ioi pronoun; do \
		$(BIN)/interp graph --task $$task --limit 20 --transcoders accept-out/transcoders \
			--out accept-out/graph-$$task || exit 1; done
	$(BIN)/python scripts/compare_probe_solvers.py
	$(BIN)/python scripts/check_acceptance.py accept-out
	$(BIN)/python scripts/measure_costs.py

# What every documented command costs (time, peak RAM, disk), into docs/costs.json, which
# the site shows under each command and the README's table repeats (about an hour on 2
# cores; on a quiet machine: each figure records its load average). `costs-make` times
# `make demo` and `make test` in a clean clone with a fresh cache (about an hour more).
costs: setup
	$(BIN)/python scripts/measure_costs.py

costs-make: setup
	$(BIN)/python scripts/measure_costs.py --make

# The SAE frontier (issue 18): 4 architectures × 3 sparsity settings at layer 6, d_sae 4608,
# 1M tokens each from activations cached once, then the best two at L0 ≈ 32 and ≈ 64 under
# a second seed. Hours on 2 cores; rerun to resume where it stopped.
FRONTIER_TOKENS ?= 1000000
frontier: setup
	$(BIN)/python scripts/sae_frontier.py --tokens $(FRONTIER_TOKENS) --out accept-out/frontier

clean:
	rm -rf $(VENV) demo-out accept-out build dist .pytest_cache .ruff_cache docs/_build \
		docs/api/generated
