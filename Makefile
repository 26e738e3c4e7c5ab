# Each target makes .venv when it is missing, installs torch (a pinned CPU wheel) first, then the
# project in editable mode with the extras it needs. Stamps make a re-run with no changes fast.
PYTHON ?= python3
TORCH_VERSION ?= 2.13.0
VENV ?= .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check

.PHONY: test demo bench lint format clean

# compat (OpenEnv, ~300 MB with gradio): its clients test the server, its server is a bench peer.
test: $(VENV)/.extras-train,server,dev,compat
	$(BIN)/python -m pytest -q -n 2

# Trains a chess agent (BC from Stockfish, then PPO; ~10 min on 2 cores) and plays 200 games
# against the random player: a summary table, the learning curve, the model, the games.
demo: $(VENV)/.extras-train
	$(BIN)/python -m training demo --out runs/demo

bench: $(VENV)/.extras-train,server,dev,compat
	$(BIN)/python -m benchmarks.chess_throughput
	$(BIN)/python -m benchmarks.multiagent
	$(BIN)/python -m benchmarks.forage_learning
	$(BIN)/python -m benchmarks.server_throughput
	$(BIN)/python -m benchmarks.ppo_speed
	$(BIN)/python -m benchmarks.training

lint: $(VENV)/.extras-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

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
	rm -rf $(VENV) build *.egg-info
