"""Training LLMs on the envs with TRL: environment classes for ``GRPOTrainer(environment_factory=)``.

Needs the ``llm-rl`` extra (trl, transformers, datasets, accelerate). Work in progress (issue 32).
"""

from training.llm_rl.chess_env import ChessToolEnv, chess_tool_env  # noqa: F401
