"""Training LLMs on the envs with TRL: environments for ``GRPOTrainer(environment_factory=)``.

- ``ChessToolEnv`` / ``chess_tool_env(**options)``: a chess game (or a puzzle) played through a
  ``move`` tool against any player.
- ``WorldToolEnv`` / ``world_tool_env(world, seat, others=...)``: one seat of any YAML world, its
  ``act`` tool generated from the world's action definitions.

The factories are picklable. Training needs the ``llm-rl`` extra (trl, transformers, datasets,
accelerate); these classes themselves import none of it.
"""

from training.llm_rl.chess_env import ChessToolEnv, chess_tool_env
from training.llm_rl.world_env import WorldToolEnv, world_tool_env

__all__ = ["ChessToolEnv", "WorldToolEnv", "chess_tool_env", "world_tool_env"]
