# The two set-up commands: `make demo` (the main job) and `make test` (the suite).
# Each creates .venv and installs what it needs by itself. `make demo` needs no root and no
# apt: the gate only simulates. `make test` (what CI runs, as root, on a fresh machine)
# also installs the system parts the suite starts: ZooKeeper, PostgreSQL, Chromium.
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo system-parts debian-parts mermaid test test-optimized lint docs bench clean zookeeper browser postgres mutation fuzz soundness signals

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# `make demo` needs only the simulated gate: raceproof itself, without the suite's extras
# (`dev` brings PySpark, 663 MB, and the manual's tools). `make test` adds them later.
CORE_STAMP := $(VENV)/.core-stamp
$(CORE_STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e .
	touch $(CORE_STAMP)

# The system parts come from Debian with apt-get, which needs root: as another user, each
# target says which package to install and stops (it installs nothing when the part is there).
need_root = if [ "$$(id -u)" != 0 ]; then \
	echo "make $@: Debian's $(1) is missing; install it as root (sudo make $@, or sudo apt-get install -y $(1))"; \
	exit 1; fi

# Debian's ZooKeeper, for the real-ZooKeeper tests and `repro --backend zookeeper`.
zookeeper:
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		$(call need_root,zookeeper); \
		echo "installing Debian's zookeeper package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper; \
	fi

# Debian's PostgreSQL server binaries, for the Spark tests' real database sinks (the tests run
# initdb into a temporary folder and start the server themselves, as a non-root user).
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then \
		$(call need_root,postgresql); \
		echo "installing Debian's postgresql package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi
	@if [ ! -f /usr/share/java/postgresql.jar ]; then \
		$(call need_root,libpostgresql-jdbc-java); \
		echo "installing Debian's PostgreSQL JDBC driver"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpostgresql-jdbc-java; \
	fi

# Debian's Chromium and Mermaid (from the npm registry, into .cache/mermaid), for the report
# tests: the HTML timeline is loaded in headless Chromium, the Mermaid text rendered by Mermaid.
# The Mermaid version is pinned once, in tools/chromium.py (which installs it on a test's first use).
MERMAID_VERSION := $(shell sed -n 's/^MERMAID_VERSION = "\(.*\)"$$/\1/p' tools/chromium.py)
browser:
	@if ! command -v chromium >/dev/null; then \
		$(call need_root,chromium); \
		echo "installing Debian's chromium package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi
	@if [ ! -f .cache/mermaid/node_modules/mermaid/dist/mermaid.min.js ]; then \
		if ! command -v npm >/dev/null; then \
			$(call need_root,nodejs npm); \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
		fi; \
		$(MAKE) --no-print-directory mermaid; \
	fi

# Mermaid from the npm registry into .cache/mermaid (npm must be there: `make browser` brings it).
mermaid:
	@if [ ! -f .cache/mermaid/node_modules/mermaid/dist/mermaid.min.js ]; then \
		mkdir -p .cache/mermaid && npm install --silent --no-audit --no-fund --prefix .cache/mermaid mermaid@$(MERMAID_VERSION); \
	fi

# Python writes no bytecode where PYTHONDONTWRITEBYTECODE is set (this machine's environment sets
# it): every process the gate or the suite starts would compile raceproof's ~300 modules from
# source, 0.9 CPU s a start instead of 0.23 (`raceproof --help`). compileall writes them once, for
# plain runs and for -O/PYTHONOPTIMIZE runs (1.4 CPU s), then only what changed; a file changed
# since is compiled in memory as before, never read stale. A file that does not compile, or a
# folder it cannot write, changes nothing here: the import that needs it says so.
bytecode = $(PY) -m compileall -q -o 0 -o 1 raceproof $(SUBPACKAGES) tools property_tests > /dev/null || true

# How to call `raceproof` from anywhere (said first: the gate takes a while), then the gate
# over the built-in catalogue (examples-only budgets: no verdict depends on speed),
# simulated: no root, no apt, no ZooKeeper. `make demo DEMO_SCENARIOS="lost-update samza-drain"`
# (or the variable in the environment) gates only those scenarios; `raceproof list` names them all.
DEMO_SCENARIOS ?=
demo: $(CORE_STAMP)
	@echo "raceproof is installed in $(CURDIR)/$(VENV)/bin. To call it as 'raceproof':"; \
	echo "  source $(CURDIR)/$(VENV)/bin/activate      # this shell only"; \
	echo "  export PATH=\"$(CURDIR)/$(VENV)/bin:\$$PATH\"   # or add this line to ~/.profile"; \
	echo; \
	$(bytecode); \
	$(VENV)/bin/raceproof check -j 2 $(DEMO_SCENARIOS)

# mypy reads the package as it is installed: `raceproof.sim` is the folder `sim/`, and so on.
TYPECHECK := $(VENV)/typecheck
SUBPACKAGES := sim models scenarios reports spark_integration

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@mkdir -p $(TYPECHECK)/raceproof
	@for f in $(CURDIR)/raceproof/*; do ln -sfn $$f $(TYPECHECK)/raceproof/$$(basename $$f); done
	@for d in $(SUBPACKAGES); do ln -sfn $(CURDIR)/$$d $(TYPECHECK)/raceproof/$$d; done
	cd $(TYPECHECK) && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml

# The manual (Sphinx + MyST, docs/): warnings are errors, every page re-read (-E) so the CLI
# reference, generated from the argparse definitions, and the API pages are never stale.
# Its Mermaid diagrams are drawn as SVG while it builds, by the Mermaid and Chromium that
# `make browser` installs (docs/_ext/mermaid_svg.py): offline, no CDN.
docs: $(STAMP) browser
	$(VENV)/bin/sphinx-build -E -W --keep-going -q -b html docs docs/_build/html

# Before the long installs (the venv, then Chromium and the rest): the system parts that are
# missing, and whether this user can install them (root, apt-get), said at once.
missing_parts = missing=""; \
	command -v chromium >/dev/null || missing="$$missing chromium"; \
	[ -f .cache/mermaid/node_modules/mermaid/dist/mermaid.min.js ] || command -v npm >/dev/null || missing="$$missing nodejs npm"; \
	[ -f /usr/share/java/zookeeper.jar ] || missing="$$missing zookeeper"; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$$missing postgresql"; \
	[ -f /usr/share/java/postgresql.jar ] || missing="$$missing libpostgresql-jdbc-java"
system-parts:
	@$(missing_parts); \
	if [ -n "$$missing" ] && { [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; }; then \
		echo "make test: Debian's$$missing missing; install as root first (sudo apt-get install -y$$missing, or sudo make test)"; \
		exit 1; \
	fi

# Three pytest workers on two cores. The Spark tests wait on their JVMs and micro-batches, so two
# workers left a core idle while they ran; four kept both busy but spent more CPU on the same
# tests (clean clones of the same commit, this machine: -n 4 1,529 and 1,449 CPU s in the tests,
# 861 and 822 s; -n 3 1,395 CPU s, 805 s).
PYTEST_WORKERS := 3

# The Debian packages make test needs that are missing, all by one apt-get (one `apt-get
# update`, not one per part), then Mermaid from npm: `make test` runs this beside the
# virtualenv's pip install, the two longest waits of a fresh machine at once.
debian-parts: system-parts
	@$(missing_parts); \
	if [ -n "$$missing" ]; then \
		echo "installing Debian's$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi
	@$(MAKE) --no-print-directory mermaid

# Lint and the manual (one core, ~40 s on a fresh machine) run beside the suite, their output
# kept in .venv/static-checks.log and printed after it; make test fails if either fails.
# The suite's Hypothesis tests draw the same examples on every run (the derandomized profile
# `ci` of property_tests/conftest.py) unless HYPOTHESIS_PROFILE names another: a CI gate is
# never flaky, and its time does not hang on the draws of the day.
HYPOTHESIS_PROFILE ?= ci
test: system-parts
	@$(MAKE) --no-print-directory -j 2 debian-parts $(STAMP)
	@$(MAKE) --no-print-directory browser zookeeper postgres
	@$(bytecode)
	@$(MAKE) --no-print-directory lint docs > $(VENV)/static-checks.log 2>&1 & static=$$!; \
	HYPOTHESIS_PROFILE=$(HYPOTHESIS_PROFILE) $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadgroup -q; suite=$$?; \
	wait $$static; checks=$$?; \
	echo "--- make lint docs (beside the suite): exit $$checks"; cat $(VENV)/static-checks.log; \
	[ $$suite = 0 ] && [ $$checks = 0 ]

# Python drops every `assert` under -O/PYTHONOPTIMIZE (some CI images set it): the CLI's contract,
# the catalogue's verdicts and the gate must not change (issue 28). Six modules run again under
# PYTHONOPTIMIZE=1, as tests of the main pass (the last section of property_tests/gate_and_cli/test_optimized.py,
# which lists them); this target runs those tests alone.
test-optimized: $(STAMP)
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) -q -p no:cacheprovider property_tests/gate_and_cli/test_optimized.py -k suite_pass

# The command-line fuzz suite (property_tests/gate_and_cli/test_fuzz_cli.py) and the world-fuzz
# (property_tests/gate_and_cli/test_hostile_world.py: paths, numbers, nesting) with a larger budget than
# `make test` gives them (150 generated bad invocations from the parser, 100 command lines,
# 100 counterexample files, 60 worlds of each kind): FUZZ_EXAMPLES of each. The statistics
# print the cases generated per kind. Not part of `make test`.
FUZZ_EXAMPLES ?= 3000
fuzz: $(STAMP)
	RACEPROOF_FUZZ_PARSER_EXAMPLES=$(FUZZ_EXAMPLES) RACEPROOF_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	RACEPROOF_WORLD_EXAMPLES=$(FUZZ_EXAMPLES) \
		$(VENV)/bin/pytest -q -p no:cacheprovider --hypothesis-show-statistics \
		property_tests/gate_and_cli/test_fuzz_cli.py property_tests/gate_and_cli/test_hostile_world.py

# SIGTERM into real Spark commands (property_tests/spark/test_spark_signals.py) at more moments than
# `make test` gives it (2 runs each of spark-check and campaign --pipeline, 1 each of campaign and
# bench --campaign): SIGNAL_RUNS and SIGNAL_OTHER_RUNS, each run a JVM (~12 CPU s, up to 40 s);
# and SIGINT/SIGTERM into `check -j 2` (gate_and_cli/test_signals_multiprocess.py) CHECK_SIGNAL_ROUNDS
# times each (4 in `make test`; ~2.3 CPU s a round), and into a campaign over one Spark session
# CAMPAIGN_SIGNAL_ROUNDS times in all (4 in `make test`; ~4.4 s a round).
SIGNAL_RUNS ?= 10
SIGNAL_OTHER_RUNS ?= 3
CHECK_SIGNAL_ROUNDS ?= 10
CAMPAIGN_SIGNAL_ROUNDS ?= 20
signals: $(STAMP)
	RACEPROOF_SPARK_SIGNALS=$(SIGNAL_RUNS) RACEPROOF_SPARK_SIGNALS_OTHERS=$(SIGNAL_OTHER_RUNS) \
		$(VENV)/bin/pytest -q -s -p no:cacheprovider property_tests/spark/test_spark_signals.py
	RACEPROOF_CHECK_SIGNAL_ROUNDS=$(CHECK_SIGNAL_ROUNDS) \
	RACEPROOF_CAMPAIGN_SIGNAL_ROUNDS=$(CAMPAIGN_SIGNAL_ROUNDS) \
		$(VENV)/bin/pytest -q -p no:cacheprovider property_tests/gate_and_cli/test_signals_multiprocess.py \
		-k "check_j2_stops or campaign_stops_at_random_moments"

bench: $(STAMP)
	$(VENV)/bin/raceproof bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis counterexamples .cache .mutmut-cache .mutation

# Mutation testing with mutmut 3 (not part of `make test`). mutmut copies the code into
# `mutants/` and imports it from there, so it needs the installed layout (`raceproof/sim/...`),
# not the repository's (`sim/` mapped by package-dir): the recipe stages that layout in
# $(MUTATION_DIR) (tools/mutation_stage.py, which also undecorates the @checker functions there:
# mutmut 3 skips decorated functions), where `mutants/` comes first on sys.path and the
# editable install's finder (appended after the path finder) is never asked. Scope and the tests run are [tool.mutmut] in
# pyproject.toml; each mutant runs only the tests that reach the mutated function, forked, in
# parallel. The Hypothesis profile `mutation` is derandomized, so the score is reproducible.
# docs/maintaining/mutation.md lists the survivors judged equivalent. MUTATE="raceproof/sim/fs.py ..." narrows it.
MUTATION_DIR := .mutation
MUTMUT := $(CURDIR)/$(VENV)/bin/mutmut
mutation: $(STAMP)
	$(VENV)/bin/pip install --quiet "mutmut==3.8.1"
	$(PY) tools/mutation_stage.py $(MUTATION_DIR)
	cd $(MUTATION_DIR) && HYPOTHESIS_PROFILE=mutation nice -n 10 $(MUTMUT) run > mutmut-run.log 2>&1 \
		|| { tail -n 40 mutmut-run.log; exit 1; }
	cd $(MUTATION_DIR) && $(CURDIR)/$(PY) $(CURDIR)/tools/mutation_score.py

# The soundness generator (property_tests/soundness_models.py) at length: every shortcut of a
# proof against the full walk over many random models, then a hunt for every planted slip
# (unfocused: each hunt's examples shared out over the generator's families), then the census
# of the state cache's sleep-set condition (property_tests/sleep_cache_census.py), then every pair
# of operations of the table (property_tests/soundness_coverage.py): the pair-coverage table per
# claim, with issue 45's locality claim; it fails below 100 % or on a problem; then the state
# cache on the kernel's own fingerprint against the plain walk on every built-in
# (property_tests/soundness_walks.py's builtin_problems).
# SOUNDNESS_EXAMPLES per property (make test runs 8); SLIP_EXAMPLES per slip (shared out over
# 11 to 14 families, so each gets 71 to 91: the focused hunts need up to 60).
SOUNDNESS_EXAMPLES ?= 300
SLIP_EXAMPLES ?= 1000
soundness: $(STAMP)
	RACEPROOF_SOUNDNESS_EXAMPLES=$(SOUNDNESS_EXAMPLES) $(VENV)/bin/pytest -q -p no:cacheprovider \
		property_tests/search_and_proof/test_soundness.py
	$(VENV)/bin/python -m property_tests.soundness_slips $(SLIP_EXAMPLES)
	$(VENV)/bin/python -m property_tests.soundness_coverage
	$(VENV)/bin/python -m property_tests.sleep_cache_census
	$(VENV)/bin/python -m property_tests.soundness_walks
