# The two set-up commands: `make demo` (the main job) and `make test` (the suite).
# Each creates .venv and installs what it needs by itself.
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint bench clean zookeeper

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

demo: $(STAMP) zookeeper
	$(PY) -m scenarios.demo

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

test: lint zookeeper
	$(VENV)/bin/pytest -n auto --dist loadgroup -q

bench: $(STAMP)
	$(VENV)/bin/raceproof bench

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis counterexamples
