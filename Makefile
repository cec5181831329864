# The two set-up commands: `make demo` (the main job) and `make test` (the suite).
# Each creates .venv and installs what it needs by itself.
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean zookeeper browser mutation

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Debian's ZooKeeper, for the real-ZooKeeper tests and `repro --backend zookeeper`.
zookeeper:
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		echo "installing Debian's zookeeper package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zookeeper; \
	fi

# Debian's Chromium and Mermaid (from the npm registry, into .cache/mermaid), for the report
# tests: the HTML timeline is loaded in headless Chromium, the Mermaid text rendered by Mermaid.
MERMAID_VERSION := 11.17.2
browser:
	@if ! command -v chromium >/dev/null; then \
		echo "installing Debian's chromium package"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	fi
	@if [ ! -f .cache/mermaid/node_modules/mermaid/dist/mermaid.min.js ]; then \
		if ! command -v npm >/dev/null; then \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; \
		fi; \
		mkdir -p .cache/mermaid && npm install --silent --no-audit --no-fund --prefix .cache/mermaid mermaid@$(MERMAID_VERSION); \
	fi

# The gate over the built-in catalogue (examples-only budgets: no verdict depends on speed).
demo: $(STAMP) zookeeper
	$(VENV)/bin/raceproof check -j 2

# mypy reads the package as it is installed: `raceproof.sim` is the folder `sim/`, and so on.
TYPECHECK := $(VENV)/typecheck
SUBPACKAGES := sim models scenarios reports spark_integration

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@mkdir -p $(TYPECHECK)/raceproof
	@for f in __init__.py py.typed; do ln -sfn $(CURDIR)/raceproof/$$f $(TYPECHECK)/raceproof/$$f; done
	@for d in $(SUBPACKAGES); do ln -sfn $(CURDIR)/$$d $(TYPECHECK)/raceproof/$$d; done
	cd $(TYPECHECK) && $(CURDIR)/$(VENV)/bin/mypy --config-file $(CURDIR)/pyproject.toml

test: lint zookeeper browser
	$(VENV)/bin/pytest -n auto --dist loadgroup -q

bench: $(STAMP)
	$(VENV)/bin/raceproof bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis counterexamples .cache .mutmut-cache

# Mutation testing (mutmut 2, which mutates the files in place, so the editable install's
# package-dir mapping sees each mutant). Not part of `make test`: a run takes minutes.
# Scope and tests can be narrowed: make mutation MUTATE=sim/dataflow.py MUTATION_TESTS=...
MUTATE ?= sim/checkers.py,sim/dataflow.py,models/samza/checkers.py,models/kafka_streams/checkers.py,models/group_coordinator/checkers.py
MUTATION_TESTS ?= property_tests/test_checkers_direct.py property_tests/test_model_checkers.py
mutation: $(STAMP)
	$(VENV)/bin/pip install --quiet "mutmut>=2.5,<3"
	rm -f .mutmut-cache
	-HYPOTHESIS_PROFILE=mutation $(VENV)/bin/mutmut run --paths-to-mutate "$(MUTATE)" --tests-dir property_tests --no-progress \
		--runner "$(CURDIR)/$(PY) -m pytest -x -q -p no:cacheprovider -p no:randomly $(MUTATION_TESTS)"
	@$(VENV)/bin/mutmut results | sed -n '/Survived/,/^$$/p'
	@$(PY) -c "import sqlite3; rows = dict(sqlite3.connect('.mutmut-cache').execute('select status, count(*) from mutant group by status').fetchall()); killed = rows.get('ok_killed', 0) + rows.get('bad_timeout', 0); total = sum(rows.values()) - rows.get('untested', 0) - rows.get('skipped', 0); print(f'mutation score: {killed}/{total} killed = {100 * killed / max(total, 1):.1f}%  ({rows})')"
