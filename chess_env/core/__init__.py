"""The RL core: board encoding, the rules, the Gymnasium, PettingZoo and vector envs, opponents and
the player registry, wrappers, and game records. It imports nothing from ``text``, ``arena`` or
``serving``."""
