"""Partially observable multi-agent worlds defined in YAML (typed variables, observability).

Filled in by the worlds issue; see DESIGN.md for the public names it will hold.
"""
