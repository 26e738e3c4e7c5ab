"""``hf:PATH`` in a world seat: a local checkpoint answers through the world's ``act`` tool, the
format ``training.llm_rl.WorldToolEnv`` trains, and its calls are validated and played.

The checkpoint is the untrained tiny model of ``tests/support/tiny_lm.py`` (TRL's Qwen2.5 chat
template) with its answers scripted: the test proves the prompt, the parsing and the play, not
skill."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("trl")
from multiagent.play import play_episode
from multiagent.players import NoopPlayer, WorldPlayer, make_world_player
from multiagent.players.base import WorldPlayerSpecError
from multiagent.players.llm import LLMWorldPlayer
from multiagent.worlds import load_world

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from tiny_checkpoint import save_tiny_tool_checkpoint, script_answers


def act_call(arguments: str) -> str:
    return f'<tool_call>\n{{"name": "act", "arguments": {arguments}}}\n</tool_call><|im_end|>'


def test_a_checkpoint_fishes_through_the_act_tool(tmp_path: Path) -> None:
    save_tiny_tool_checkpoint(tmp_path)
    config = load_world("commons")
    player = make_world_player(f"hf:{tmp_path}?tool_calling=yes&retries=1", config)
    assert isinstance(player, LLMWorldPlayer)
    prompts = script_answers(player.agent.client, [
        act_call('{"harvest": 99}'),  # above the bound: fed back, asked again
        act_call('{"harvest": 4.5}'),
        act_call('{"harvest": 2}'),
    ])  # fmt: skip
    players: dict[str, WorldPlayer] = {seat: NoopPlayer(config) for seat in config.agent_names}
    players["Fisher_1"] = player
    outcome = play_episode(config, players, seed=0, max_turns=2)
    assert outcome.invalid_actions["Fisher_1"] == 0
    assert '"name": "act"' in prompts[0] and "<tools>" in prompts[0]
    assert "harvest" in prompts[1].rsplit("<|im_start|>user", 1)[-1]  # the bound, fed back
    assert [step.action for step in player.decisions] == [{"harvest": 4.5}, {"harvest": 2}]
    assert outcome.returns["Fisher_1"] > 0


def test_a_folder_that_is_not_a_checkpoint_is_the_specs_error(tmp_path: Path) -> None:
    with pytest.raises(WorldPlayerSpecError, match="cannot load the checkpoint"):
        make_world_player(f"hf:{tmp_path / 'missing'}", load_world("commons"))
