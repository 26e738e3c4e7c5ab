"""The text side: ``ChessTextEnv`` for LLM agents, prompt conditions, LLM players and agents,
evaluation, and games watched move by move. It builds on ``chess_env.core`` only."""
