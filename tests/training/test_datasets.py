"""training.datasets: chess rows are the positions' own tensors, legal labels and exact masks;
world rows replay in the flattened env; a seed regenerates the same bytes; files round-trip and
refuse tampering; splits keep games whole."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import chess
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import training.experts as experts_module
from chess_env.encoding import (
    ACTION_SIZE,
    board_to_tensor,
    decode_action,
    encode_move,
    legal_action_mask,
)
from chess_env.rules import ChessGame
from training.datasets import (
    CHESS_SOURCES,
    MASK_BYTES,
    OPENING_PLIES,
    BCDataset,
    DatasetError,
    combine,
    episode_seed,
    flat_action,
    generate_chess_dataset,
    generate_world_dataset,
    label_positions,
    load_dataset,
)
from training.dto import DatasetManifestDTO
from training.envs import env_factory
from training.experts import world_expert

sys.path.insert(0, str(Path(__file__).parents[1] / "support"))
from stockfish_binary import needs_stockfish


@pytest.fixture(scope="module")
def chess_data() -> BCDataset:
    return generate_chess_dataset("alphabeta:1", 90, seed=0, progress_bar=False)


@pytest.fixture(scope="module")
def trade_data() -> BCDataset:
    return generate_world_dataset("trade", 12, seed=0, progress_bar=False)


def assert_same(left: BCDataset, right: BCDataset) -> None:
    assert left.manifest == right.manifest
    assert left.arrays().keys() == right.arrays().keys()
    for name, array in left.arrays().items():
        np.testing.assert_array_equal(array, right.arrays()[name], err_msg=name)
        assert array.dtype == right.arrays()[name].dtype, name


def synthetic(sizes: list[int]) -> BCDataset:
    """A chess-shaped dataset with games of the given sizes (contents irrelevant)."""
    rows = sum(sizes)
    return BCDataset(
        observations=np.zeros((rows, 8, 8, 12), dtype=np.uint8),
        actions=np.arange(rows, dtype=np.int64),
        masks=np.zeros((rows, MASK_BYTES), dtype=np.uint8),
        episodes=np.repeat(np.arange(len(sizes), dtype=np.int32), sizes),
        source=(np.repeat(np.arange(len(sizes)), sizes) % 2).astype(np.uint8),
        fens=None,
        manifest=DatasetManifestDTO(
            env="chess",
            expert="alphabeta:1",
            positions=rows,
            seed=0,
            sha256="0" * 64,
            observation_shape=(8, 8, 12),
            action_size=ACTION_SIZE,
            masked=True,
            sources={name: 0 for name in CHESS_SOURCES},
        ),
    )


# -- chess --------------------------------------------------------------------------------------


def test_chess_rows_are_the_positions_with_legal_labels_and_exact_masks(
    chess_data: BCDataset,
) -> None:
    masks = chess_data.unpacked_masks(np.arange(len(chess_data)))
    assert masks.shape == (90, ACTION_SIZE) and masks.dtype == bool
    for index, fen in enumerate(chess_data.fens):
        board = chess.Board(str(fen))
        np.testing.assert_array_equal(chess_data.observations[index], board_to_tensor(board))
        action = int(chess_data.actions[index])
        assert decode_action(action, board) in board.legal_moves
        legal = {encode_move(move, board.turn) for move in board.legal_moves}
        assert set(np.flatnonzero(masks[index])) == legal
        np.testing.assert_array_equal(masks[index], legal_action_mask(board))


def test_chess_dataset_shapes_and_manifest(chess_data: BCDataset) -> None:
    manifest = chess_data.manifest
    assert chess_data.observations.shape == (90, 8, 8, 12)
    assert chess_data.observations.dtype == np.uint8
    assert chess_data.actions.dtype == np.int64 and chess_data.actions.shape == (90,)
    assert chess_data.masks.shape == (90, MASK_BYTES) and chess_data.masks.dtype == np.uint8
    assert manifest.env == "chess" and manifest.expert == "alphabeta:1"
    assert manifest.positions == 90 and manifest.seed == 0 and manifest.masked
    assert manifest.observation_shape == (8, 8, 12) and manifest.action_size == ACTION_SIZE
    assert manifest.sources == {"vs_random": 45, "self_play": 45}
    assert sum(manifest.sources.values()) == manifest.positions
    assert list(np.bincount(chess_data.source)) == [45, 45]


def test_both_colours_are_to_move_in_both_kinds_of_game(chess_data: BCDataset) -> None:
    for source in range(len(CHESS_SOURCES)):
        turns = {str(fen).split()[1] for fen in chess_data.fens[chess_data.source == source]}
        assert turns == {"w", "b"}, CHESS_SOURCES[source]


def test_the_expert_plays_its_labels_and_the_random_side_does_not_have_to(
    chess_data: BCDataset,
) -> None:
    """Consecutive rows of a game are one legal move apart; the expert's rows play their label
    (every row of self-play after the random opening)."""
    expert_plies, ply = 0, 0
    for index in range(len(chess_data) - 1):
        if chess_data.episodes[index] != chess_data.episodes[index + 1]:
            ply = 0
            continue
        board = chess.Board(str(chess_data.fens[index]))
        after = str(chess_data.fens[index + 1])
        played = [m for m in board.legal_moves if _fen_after(board, m) == after]
        assert played, f"row {index + 1} does not follow row {index}"
        label = decode_action(int(chess_data.actions[index]), board)
        episode = int(chess_data.episodes[index])
        if CHESS_SOURCES[chess_data.source[index]] == "vs_random":
            expert_colour = chess.WHITE if episode % 2 == 0 else chess.BLACK
            expert_turn = board.turn == expert_colour
        else:
            expert_turn = ply >= OPENING_PLIES[1]
        if expert_turn:
            assert played == [label], (index, board.fen())
            expert_plies += 1
        ply += 1
    assert expert_plies > 20


def _fen_after(board: chess.Board, move: chess.Move) -> str:
    board.push(move)
    fen = board.fen()
    board.pop()
    return fen


def test_a_seed_regenerates_the_same_bytes_and_another_seed_other_games() -> None:
    first = generate_chess_dataset("alphabeta:1", 30, seed=4, progress_bar=False)
    again = generate_chess_dataset("alphabeta:1", 30, seed=4, progress_bar=False)
    other = generate_chess_dataset("alphabeta:1", 30, seed=5, progress_bar=False)
    assert_same(first, again)
    assert first.manifest.sha256 == again.manifest.sha256
    assert other.manifest.sha256 != first.manifest.sha256
    assert not np.array_equal(other.observations, first.observations)


def test_alphabeta_two_labels_are_legal() -> None:
    data = generate_chess_dataset("alphabeta", 12, seed=1, progress_bar=False)
    assert data.manifest.expert == "alphabeta:2"
    for fen, action in zip(data.fens, data.actions, strict=True):
        decode_action(int(action), chess.Board(str(fen)))


def test_auto_records_the_expert_it_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(experts_module, "stockfish_installed", lambda: False)
    data = generate_chess_dataset("auto", 4, seed=0, progress_bar=False)
    assert data.manifest.expert == "alphabeta:2"


@needs_stockfish
@pytest.mark.stockfish
def test_stockfish_datasets_are_legal_and_reproducible() -> None:
    first = generate_chess_dataset("auto", 40, seed=2, progress_bar=False)
    again = generate_chess_dataset("stockfish:1", 40, seed=2, progress_bar=False)
    assert first.manifest.expert == "stockfish:1"
    assert_same(first, again)
    for fen, action in zip(first.fens, first.actions, strict=True):
        decode_action(int(action), chess.Board(str(fen)))


@pytest.mark.parametrize("positions", [0, -3])
def test_a_dataset_needs_positions(positions: int) -> None:
    with pytest.raises(ValueError, match="positions"):
        generate_chess_dataset("alphabeta:1", positions, seed=0, progress_bar=False)


def test_a_bad_expert_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'minimax:2'"):
        generate_chess_dataset("minimax:2", 10, seed=0, progress_bar=False)


# -- files --------------------------------------------------------------------------------------


def test_save_and_load_round_trip(chess_data: BCDataset, tmp_path: Path) -> None:
    npz = chess_data.save(tmp_path / "sub" / "data")
    assert npz == tmp_path / "sub" / "data.npz"
    manifest = json.loads((tmp_path / "sub" / "data.json").read_text(encoding="utf-8"))
    assert manifest["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
    for name in ("data", "data.npz", "data.json"):
        assert_same(load_dataset(tmp_path / "sub" / name), chess_data)
    with np.load(npz) as stored:  # a plain npz: numpy reads it without this module
        np.testing.assert_array_equal(stored["actions"], chess_data.actions)


def test_world_datasets_round_trip_too(trade_data: BCDataset, tmp_path: Path) -> None:
    assert_same(load_dataset(trade_data.save(tmp_path / "trade.npz")), trade_data)


def test_a_changed_npz_is_refused_naming_it(chess_data: BCDataset, tmp_path: Path) -> None:
    npz = chess_data.save(tmp_path / "data")
    content = bytearray(npz.read_bytes())
    content[len(content) // 2] ^= 0xFF
    npz.write_bytes(bytes(content))
    with pytest.raises(DatasetError, match="SHA-256") as caught:
        load_dataset(npz)
    assert str(npz) in str(caught.value)


@pytest.mark.parametrize("missing", ["data.npz", "data.json"])
def test_a_missing_file_is_named(chess_data: BCDataset, tmp_path: Path, missing: str) -> None:
    chess_data.save(tmp_path / "data")
    (tmp_path / missing).unlink()
    with pytest.raises(DatasetError, match="no such") as caught:
        load_dataset(tmp_path / "data")
    assert str(tmp_path / missing) in str(caught.value)


def test_an_invalid_manifest_is_named(chess_data: BCDataset, tmp_path: Path) -> None:
    chess_data.save(tmp_path / "data")
    manifest = tmp_path / "data.json"
    payload = json.loads(manifest.read_text(encoding="utf-8"))
    payload["positions"] = 0
    manifest.write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(DatasetError, match="positions") as caught:
        load_dataset(tmp_path / "data")
    assert str(manifest) in str(caught.value)


def test_arrays_that_do_not_fit_the_manifest_are_refused(
    chess_data: BCDataset, tmp_path: Path
) -> None:
    """A consistent hash over wrong arrays: the shapes are checked after the hash."""
    arrays = chess_data.arrays()
    arrays["actions"] = arrays["actions"][:-1]
    npz = tmp_path / "data.npz"
    np.savez_compressed(npz, **arrays)
    manifest = chess_data.manifest.model_copy(
        update={"sha256": hashlib.sha256(npz.read_bytes()).hexdigest()}
    )
    (tmp_path / "data.json").write_text(manifest.model_dump_json(), encoding="utf-8")
    with pytest.raises(DatasetError, match="rows") as caught:
        load_dataset(npz)
    assert str(npz) in str(caught.value)


def test_unpacked_masks_of_a_batch(chess_data: BCDataset) -> None:
    batch = chess_data.unpacked_masks(np.array([5, 0]))
    assert batch.shape == (2, ACTION_SIZE)
    np.testing.assert_array_equal(batch[1], legal_action_mask(chess.Board(chess_data.fens[0])))


# -- splits -------------------------------------------------------------------------------------


def test_split_keeps_games_whole_and_follows_the_seed() -> None:
    data = synthetic([10] * 10)
    train, val = data.split(0.2, seed=3)
    assert len(val) == 20 and len(train) == 80
    assert not set(train.episodes) & set(val.episodes)
    assert train.manifest.positions == 80 and val.manifest.positions == 20
    assert_same(data.split(0.2, seed=3)[1], val)
    others = {tuple(sorted(set(data.split(0.2, seed=seed)[1].episodes))) for seed in range(8)}
    assert len(others) > 1


def test_split_draws_rows_when_every_game_is_too_long() -> None:
    train, val = synthetic([50, 50]).split(0.1, seed=0)
    assert (len(train), len(val)) == (90, 10)


@settings(max_examples=60, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 30), min_size=1, max_size=12).filter(lambda s: sum(s) >= 2),
    val_fraction=st.floats(0.01, 0.99),
    seed=st.integers(0, 2**32),
)
def test_split_is_a_partition_into_two_nonempty_parts(
    sizes: list[int], val_fraction: float, seed: int
) -> None:
    data = synthetic(sizes)
    train, val = data.split(val_fraction, seed)
    assert len(train) >= 1 and len(val) >= 1
    rows = sorted([*train.actions.tolist(), *val.actions.tolist()])
    assert rows == list(range(sum(sizes)))
    for part in (train, val):
        assert sum(part.manifest.sources.values()) == part.manifest.positions == len(part)


def test_split_rejects_a_bad_fraction_and_a_single_row() -> None:
    with pytest.raises(ValueError, match="val_fraction"):
        synthetic([5]).split(1.0, seed=0)
    with pytest.raises(DatasetError, match="cannot split"):
        synthetic([1]).split(0.5, seed=0)


def test_split_parts_carry_their_own_hash(chess_data: BCDataset, tmp_path: Path) -> None:
    train, _ = chess_data.split(0.2, seed=0)
    assert train.manifest.sha256 != chess_data.manifest.sha256
    assert_same(load_dataset(train.save(tmp_path / "train")), train)


# -- worlds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("world", "learner"), [("forage", None), ("forage", "Forager_2")])
def test_world_rows_fit_the_flattened_spaces(world: str, learner: str | None) -> None:
    data = generate_world_dataset(world, 25, seed=0, learner=learner, progress_bar=False)
    env = env_factory(f"world:{world}", learner=learner)()
    assert data.manifest.learner == (learner or "Forager_1")
    assert data.manifest.expert == "scripted" and not data.manifest.masked
    assert data.masks is None and data.fens is None
    assert set(data.observations) == set(env.observation_space.spaces)
    for index in range(len(data)):
        row = {key: value[index] for key, value in data.observations.items()}
        assert env.observation_space.contains(row), index
        assert env.action_space.contains(int(data.actions[index]))
    with pytest.raises(DatasetError, match="no action masks"):
        data.unpacked_masks(np.arange(3))


def test_trade_rows_replay_in_the_flattened_env(trade_data: BCDataset) -> None:
    """The stored actions are the ones played: stepping the env with them from the episode's
    seed gives back every stored observation."""
    env = env_factory("world:trade")()
    assert trade_data.manifest.action_nvec == tuple(env.action_space.nvec)
    assert trade_data.actions.shape == (12, 4)
    observation, _ = env.reset(seed=episode_seed(0, 0, 0))
    for index in range(len(trade_data)):
        for key, value in observation.items():
            np.testing.assert_array_equal(trade_data.observations[key][index], value, key)
        assert env.action_space.contains(trade_data.actions[index])
        observation, *_ = env.step(trade_data.actions[index])


def test_flat_action_inverts_the_wrappers_conversion() -> None:
    env = env_factory("world:trade")()
    single, expert = env.unwrapped, world_expert("trade")
    observation, _ = single.reset(seed=0)
    for _ in range(6):
        action = expert(observation)
        back = env.action(flat_action(env, action))
        assert {k: back[k] for k in ("verb", "good", "target_town")} == {
            k: int(action[k]) for k in ("verb", "good", "target_town")
        }
        np.testing.assert_allclose(back["amount"], action["amount"])
        observation, *_ = single.step(back)
    forage = env_factory("world:forage")()
    assert flat_action(forage, {"move": 3}) == 3


def test_world_datasets_follow_the_seed() -> None:
    first = generate_world_dataset("forage", 30, seed=7, progress_bar=False)
    again = generate_world_dataset("forage", 30, seed=7, progress_bar=False)
    other = generate_world_dataset("forage", 30, seed=8, progress_bar=False)
    assert_same(first, again)
    assert other.manifest.sha256 != first.manifest.sha256


@pytest.mark.parametrize(
    ("world", "learner", "match"),
    [("chess", None, "unknown world"), ("forage", "Nobody", "unknown learner")],
)
def test_a_bad_world_or_learner_is_refused(world: str, learner: str | None, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        generate_world_dataset(world, 5, seed=0, learner=learner, progress_bar=False)


def test_parallel_workers_label_the_same_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks are seeded on their own, so the pool's size changes nothing in the data."""
    import training.datasets

    monkeypatch.setattr(training.datasets, "BLOCK_POSITIONS", 7)  # several blocks per source
    alone = generate_chess_dataset("alphabeta:1", 30, seed=3, progress_bar=False)
    pooled = generate_chess_dataset("alphabeta:1", 30, seed=3, progress_bar=False, workers=2)
    assert alone.manifest == pooled.manifest
    assert np.array_equal(alone.observations, pooled.observations)
    assert np.array_equal(alone.actions, pooled.actions)
    assert np.array_equal(alone.episodes, pooled.episodes)
    # episodes are whole games: unique per block, increasing over the blocks
    assert np.all(np.diff(alone.episodes) >= 0) and alone.episodes[0] == 0


# -- moves to avoid (DAgger's drawn games) ------------------------------------------------------

STALEMATE_FEN = "k7/8/8/2Q5/8/8/8/7K w - - 0 1"  # Qb6 and Qc7 stalemate
MATE_FEN = "6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1"  # Ra8 mates


def endings_data() -> BCDataset:
    fens = [chess.STARTING_FEN, STALEMATE_FEN, MATE_FEN]
    endings = [ChessGame(chess.Board(fen)).ending_actions() for fen in fens]
    return label_positions(
        "alphabeta:1", fens, np.array([0, 1, 2]), seed=0, endings=endings, progress_bar=False
    )


def ucis(data: BCDataset, name: str, row: int) -> set[str]:
    board = chess.Board(str(data.fens[row]))
    return {decode_action(int(a), board).uci() for a in np.flatnonzero(data.unpacked(name, [row]))}


def test_mates_and_avoid_mark_the_ending_moves_and_round_trip(tmp_path: Path) -> None:
    data = endings_data()
    assert [ucis(data, "mates", row) for row in range(3)] == [set(), set(), {"a1a8"}]
    assert [ucis(data, "avoid", row) for row in range(3)] == [set(), {"c5b6", "c5c7"}, set()]
    data.save(tmp_path / "data")
    assert_same(load_dataset(tmp_path / "data"), data)
    assert ucis(data.subset(np.array([1])), "avoid", 0) == {"c5b6", "c5c7"}


def test_combine_keeps_the_move_sets_and_marks_nothing_where_they_were_unknown(
    chess_data: BCDataset,
) -> None:
    both = combine([chess_data, endings_data()])
    assert len(both) == len(chess_data) + 3
    for name in ("mates", "avoid"):
        assert not both.unpacked(name, np.arange(len(chess_data))).any()
        np.testing.assert_array_equal(getattr(both, name)[-3:], getattr(endings_data(), name))
    plain = combine([chess_data, chess_data])
    assert plain.mates is None and plain.avoid is None
    with pytest.raises(DatasetError, match="has no moves to avoid"):
        plain.unpacked("avoid", [0])


def test_move_sets_must_fit_the_positions_and_the_mask_shape(chess_data: BCDataset) -> None:
    with pytest.raises(ValueError, match="endings has 1 entries for 2 positions"):
        label_positions(
            "alphabeta:1", [chess.STARTING_FEN] * 2, np.array([0, 0]), 0,
            endings=[ChessGame().ending_actions()], progress_bar=False,
        )  # fmt: skip
    for name in ("mates", "avoid"):
        with pytest.raises(DatasetError, match=f"{name} must be"):
            BCDataset(**{**vars(chess_data), name: np.zeros((len(chess_data), 3), np.uint8)})
