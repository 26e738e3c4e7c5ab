"""What both env families share: Malli-lite schemas (``schema``), frozen, versioned DTOs (``dto``),
the OpenEnv-compatible server core (``server``) and its clients (``client``), LLM plumbing
(``llm``) and the ports the env packages implement (``ports``). It imports neither chess_env nor
multiagent (``tests/test_layers.py``); docs/design.md describes the layers.
"""
