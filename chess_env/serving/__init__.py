"""Serving: the OpenEnv adapter and app (``app``), the multi-game service (``service``), its store
(``game_store``) and the browser viewer (``viewer``). It may use every other layer."""
