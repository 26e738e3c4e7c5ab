"""Training: PPO / MaskablePPO, behaviour cloning, the BC-then-PPO anneal, evaluation.

Filled in by the training issue; see DESIGN.md for the public names it will hold.
"""
