"""Behaviour-cloning datasets: observations an agent sees, labelled with an expert's actions.

- ``generate_chess_dataset(expert, positions, seed)`` (``chess_games``): chess positions from the
  expert's games, each with the board tensor ``ChessEnv`` shows, the expert's move as an action
  index and the legal-action mask (for a masked NLL).
- ``label_positions(expert, fens, ...)`` (``chess_positions``): positions someone else reached
  (DAgger), labelled the same way.
- ``generate_world_dataset(world, positions, seed, learner)`` (``worlds``): a built-in world's
  scripted expert in the learner's seat, stored as ``FlattenForSB3`` observations and actions,
  ready for SB3's ``MultiInputPolicy``.
- ``BCDataset`` (``dataset``): the arrays and their ``DatasetManifest``; ``save`` /
  ``load_dataset`` (an .npz with its manifest as .json beside it, checked by SHA-256), ``split``
  (by game), ``unpacked_masks``; ``combine``; ``DatasetError``, whose message names the file.
- ``parallel``: the seeded blocks that let several processes label the same rows as one.
"""

from training.datasets.chess_games import (
    CHESS_SOURCES,
    GAME_PLIES,
    OPENING_PLIES,
    generate_chess_dataset,
)
from training.datasets.chess_positions import label_positions
from training.datasets.dataset import (
    BOARD_SHAPE,
    MASK_BYTES,
    BCDataset,
    DatasetError,
    combine,
    load_dataset,
)
from training.datasets.parallel import episode_seed
from training.datasets.worlds import flat_action, generate_world_dataset

__all__ = [
    "BOARD_SHAPE",
    "CHESS_SOURCES",
    "GAME_PLIES",
    "MASK_BYTES",
    "OPENING_PLIES",
    "BCDataset",
    "DatasetError",
    "combine",
    "episode_seed",
    "flat_action",
    "generate_chess_dataset",
    "generate_world_dataset",
    "label_positions",
    "load_dataset",
]
