# Each target makes .venv when it is missing, installs torch (a pinned CPU wheel) first, then the
# project in editable mode with the extras it needs. Stamps make a re-run with no changes fast.
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: test test-browser test-distributed demo bench peer-llm-sim docs lint format clean

# compat (OpenEnv, ~300 MB with gradio): its clients test the server, its server is a bench peer.
# llm-rl (TRL, transformers, datasets, accelerate): the GRPO tests train a tiny model for real.
# The browser tests have their own target: they need Debian's chromium.
test: $(VENV)/.extras-train,server,dev,compat,llm-rl
	$(BIN)/python -m pytest -q -n 2 --ignore=tests/browser

# The viewer in a real headless browser: Debian's chromium and chromium-driver (installed here
# when missing and apt-get can), driven by Selenium; screenshots go to artifacts/browser/.
test-browser: $(VENV)/.extras-server,dev
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && apt-get install -y -qq chromium chromium-driver) || \
		echo "could not install chromium and chromium-driver: install them by hand"
	POLYARENA_REQUIRE_BROWSER=1 $(BIN)/python -m pytest -q -p no:cacheprovider tests/browser

# Ray RLlib in its own venv (ray pins gymnasium 1.2.2; the main venv stays ray-free): one short
# PPO iteration per env, locally with 0 and 1 env runners. The install takes a few minutes once.
DIST_VENV ?= .venv-distributed
test-distributed:
	$(MAKE) --no-print-directory VENV=$(DIST_VENV) $(DIST_VENV)/.extras-train,dev,distributed
	$(DIST_VENV)/bin/python -m pytest -q -rs -p no:cacheprovider tests/distributed

# Trains a chess agent (BC from Stockfish, then PPO; ~10 min on 2 cores) and plays 200 games
# against the random player: a summary table, the learning curve, the model, the games.
demo: $(VENV)/.extras-train
	$(BIN)/python -m training demo --out runs/demo

bench: $(VENV)/.extras-train,server,dev,compat
	$(BIN)/python -m benchmarks.chess_throughput
	$(BIN)/python -m benchmarks.chess_vector
	$(BIN)/python -m benchmarks.multiagent
	$(BIN)/python -m benchmarks.forage_learning
	$(BIN)/python -m benchmarks.server_throughput
	$(BIN)/python -m benchmarks.server_attacks
	$(BIN)/python -m benchmarks.training_speed
	$(BIN)/python -m benchmarks.training
	$(BIN)/python -m benchmarks.arena_ladder

# llm-sim (rHedBull/llm-sim at a pinned commit; Python >= 3.12), the peer of benchmarks.multiagent's
# state validation, in its own venv: its source from the local mirror when there is one, else from
# GitHub; pydantic and pydantic-core at its uv.lock's versions (its models fail on newer pydantic).
LLM_SIM_VENV ?= .venv-llm-sim
LLM_SIM_COMMIT ?= 7a0cac087f4380902a83f2cf77fa5ed257d760c0
LLM_SIM_MIRROR ?= /work/.mirror/rHedBull+llm-sim/repo
LLM_SIM_PINS ?= pydantic==2.11.9 pydantic-core==2.33.2
PYTHON312 ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python) python3.12)
peer-llm-sim: $(LLM_SIM_VENV)/.llm-sim-$(LLM_SIM_COMMIT)

$(LLM_SIM_VENV)/.llm-sim-$(LLM_SIM_COMMIT):
	$(PYTHON312) -m venv $(LLM_SIM_VENV)
	rm -rf $(LLM_SIM_VENV)/src && mkdir -p $(LLM_SIM_VENV)/src
	if [ -d "$(LLM_SIM_MIRROR)" ]; then \
		git --git-dir="$(LLM_SIM_MIRROR)" archive $(LLM_SIM_COMMIT) | tar -x -C $(LLM_SIM_VENV)/src; \
	else \
		curl -fsSL https://github.com/rHedBull/llm-sim/archive/$(LLM_SIM_COMMIT).tar.gz \
			| tar -xz --strip-components=1 -C $(LLM_SIM_VENV)/src; \
	fi
	$(LLM_SIM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		$(LLM_SIM_VENV)/src $(LLM_SIM_PINS)
	touch $@

# The documentation site (mkdocs.yml, docs/) with warnings as errors: a broken link, anchor or API
# reference fails the build. The API pages are rendered from the source by griffe (nothing imported).
docs: $(VENV)/.extras-docs
	NO_MKDOCS_2_WARNING=1 DISABLE_MKDOCS_2_WARNING=true $(BIN)/python -m mkdocs build --strict --quiet

# ruff, and mypy over the four packages (its settings are pyproject.toml's [tool.mypy]).
lint: $(VENV)/.extras-train,server,dev,compat,llm-rl
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy chess_env multiagent envkit training

format: $(VENV)/.extras-dev
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.torch-$(TORCH_VERSION): | $(BIN)/python
	$(PIP) torch==$(TORCH_VERSION)
	touch $@

$(VENV)/.extras-%: pyproject.toml $(VENV)/.torch-$(TORCH_VERSION)
	$(PIP) -e ".[$*]"
	touch $@

clean:
	rm -rf $(VENV) $(DIST_VENV) $(LLM_SIM_VENV) build *.egg-info
