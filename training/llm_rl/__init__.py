"""Training LLMs on the envs with TRL: environment classes for ``GRPOTrainer(environment_factory=)``.

Needs the ``llm-rl`` extra (trl, transformers, datasets, accelerate). Work in progress (issue 32).
"""
