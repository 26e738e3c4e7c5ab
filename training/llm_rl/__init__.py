"""Training LLMs on the envs with TRL: environments for ``GRPOTrainer(environment_factory=)``.

- ``ChessToolEnv`` / ``chess_tool_env(**options)``: a chess game (or a puzzle) played through a
  ``move`` tool against any player.
- ``WorldToolEnv`` / ``world_tool_env(world, seat, others=...)``: one seat of any YAML world, its
  ``act`` tool generated from the world's action definitions.
- ``RemoteToolEnv`` / ``remote_tool_env(base_url, ...)``: a running server over WebSocket, its
  tool generated from the server's ``/schema``.
- ``load_tasks`` / ``check_answer`` (``tasks``): 400 chess positions with every solving move,
  built with Stockfish and shipped; ``training.llm_rl.datasets.seed_dataset`` makes GRPO rows
  of them (imports ``datasets``).
- ``ArenaEvalCallback`` (``training.llm_rl.callbacks``, imports transformers): rates each saved
  checkpoint in the chess arena as ``hf:CHECKPOINT``.

The factories are picklable. Training needs the ``llm-rl`` extra (trl, transformers, datasets,
accelerate); these classes themselves import none of it.
"""

from training.llm_rl.chess_env import ChessToolEnv, chess_tool_env
from training.llm_rl.remote_env import RemoteToolEnv, remote_tool_env
from training.llm_rl.tasks import ChessTask, check_answer, load_tasks
from training.llm_rl.world_env import WorldToolEnv, world_tool_env

__all__ = [
    "ChessTask",
    "ChessToolEnv",
    "RemoteToolEnv",
    "WorldToolEnv",
    "check_answer",
    "chess_tool_env",
    "load_tasks",
    "remote_tool_env",
    "world_tool_env",
]
