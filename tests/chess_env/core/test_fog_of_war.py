"""FogOfWar: the fogged view against python-chess's attack sets, both env APIs, masks and noise.

The oracle never uses the wrapper's bitboards: a square is visible when python-chess says an own
piece stands on it, attacks it (``board.attacks``) or moves there in a pseudo-legal move; the
expected planes are ``board_to_tensor`` of a copy of the board with the hidden opponent pieces
removed.
"""

from __future__ import annotations

import random
import warnings
from typing import Any

import chess
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.classic.tictactoe.tictactoe import env as tictactoe_env
from pettingzoo.test import api_test, seed_test
from stable_baselines3.common.env_checker import check_env as sb3_check_env

from chess_env import ChessEnv, aec_env, board_to_tensor
from chess_env.core.wrappers import AECFogOfWar, FogOfWar, GymFogOfWar, fog_planes, visible_mask
from multiagent.wrappers import GymNoiseWrapper

COLORS = (chess.WHITE, chess.BLACK)


def expected_visible(board: chess.Board, color: chess.Color) -> set[chess.Square]:
    """Own squares, their attacks and the pseudo-legal destinations of ``color`` (python-chess)."""
    own = chess.SquareSet(board.occupied_co[color])
    visible = set(own)
    for square in own:
        visible |= set(board.attacks(square))
    mover = board.copy(stack=False)
    if mover.turn != color:
        mover.turn, mover.ep_square = color, None  # the ep square belongs to the side to move
    visible |= {move.to_square for move in mover.generate_pseudo_legal_moves()}
    return visible


def expected_planes(board: chess.Board, color: chess.Color, orientation: chess.Color) -> np.ndarray:
    """The (8, 8, 13) view built square by square from python-chess."""
    visible = expected_visible(board, color)
    fogged = board.copy(stack=False)
    for square in chess.SquareSet(board.occupied_co[not color]):
        if square not in visible:
            fogged.remove_piece_at(square)
    planes = np.zeros((8, 8, 13), dtype=np.uint8)
    planes[..., :12] = board_to_tensor(fogged, "white" if orientation else "black")
    for square in visible:
        rank = chess.square_rank(square)
        planes[7 - rank if orientation else rank, chess.square_file(square), 12] = 1
    return planes


def assert_fogged(observed: np.ndarray, board: chess.Board, color: chess.Color, orientation: bool):
    """Exact view, and (stated on its own) no hidden opponent piece anywhere in the planes."""
    np.testing.assert_array_equal(observed, expected_planes(board, color, orientation))
    visible = expected_visible(board, color)
    for square in chess.SquareSet(board.occupied_co[not color]):
        rank = chess.square_rank(square)
        row, column = (7 - rank if orientation else rank), chess.square_file(square)
        assert observed[row, column, :12].any() == (square in visible), chess.square_name(square)


def playout(seed: int, plies: int) -> chess.Board:
    """A random legal game of up to ``plies`` plies, preferring captures half the time."""
    rng, board = random.Random(seed), chess.Board()
    for _ in range(plies):
        moves = list(board.legal_moves)
        if not moves:
            break
        captures = [move for move in moves if board.is_capture(move)]
        board.push(rng.choice(captures if captures and rng.random() < 0.5 else moves))
    return board


# -- the visibility rule against python-chess -------------------------------------------------


def check_every_view(board: chess.Board) -> None:
    """Both players' views, in both orientations, against the oracle."""
    for color in COLORS:
        assert chess.SquareSet(visible_mask(board, color)) == expected_visible(board, color)
        for orientation in COLORS:
            planes = board_to_tensor(board, "white" if orientation else "black")
            assert_fogged(fog_planes(planes, board, color, orientation), board, color, orientation)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), plies=st.integers(0, 160))
def test_fog_matches_python_chess_on_random_positions(seed: int, plies: int) -> None:
    check_every_view(playout(seed, plies))


@pytest.mark.parametrize(
    "fen",
    [
        "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2",  # en passant
        "r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1",  # castling both ways
        "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
        "1n1n4/2P5/8/8/8/8/5p2/k3K1N1 w - - 0 1",  # promotions and captures onto the back rank
        "4k3/8/8/8/3Q4/8/8/4K3 w - - 0 1",  # a queen on an open board
    ],
)
def test_fog_matches_python_chess_on_special_positions(fen: str) -> None:
    check_every_view(chess.Board(fen))


@pytest.mark.parametrize(
    ("fen", "color", "visible", "hidden"),
    [
        # a pawn sees its empty diagonals, but not the piece that blocks it: it can neither
        # capture nor move there
        ("4k3/8/8/8/3p4/3P4/8/4K3 w - - 0 1", chess.WHITE, ["c4", "e4"], ["d4", "d5"]),
        # two squares from the start rank only when both are empty
        ("4k3/8/8/8/8/8/3P4/4K3 w - - 0 1", chess.WHITE, ["d3", "d4"], ["d5"]),
        ("4k3/8/8/8/8/3n4/3P4/4K3 w - - 0 1", chess.WHITE, ["c3", "e3"], ["d3", "d4"]),
        # a slider sees the first piece in its way and nothing behind it
        ("q3k3/8/8/8/8/8/8/R3K3 w - - 0 1", chess.WHITE, ["a8"], ["b8"]),
        # a pinned piece still sees along its lines (dark chess has no check)
        ("4k3/4r3/8/8/8/8/4N3/4K3 w - - 0 1", chess.WHITE, ["d4", "f4", "c3"], ["e4"]),
        # black's pawns push down the board
        ("4k3/4p3/8/8/8/8/8/4K3 b - - 0 1", chess.BLACK, ["e6", "e5", "d6", "f6"], ["e4"]),
    ],
)
def test_the_documented_rule_on_hand_made_positions(
    fen: str, color: chess.Color, visible: list[str], hidden: list[str]
) -> None:
    seen = chess.SquareSet(visible_mask(chess.Board(fen), color))
    assert all(chess.parse_square(name) in seen for name in visible)
    assert not any(chess.parse_square(name) in seen for name in hidden)


# -- Gymnasium --------------------------------------------------------------------------------


@pytest.mark.parametrize("agent_color", ["white", "black"])
@pytest.mark.parametrize("perspective", ["side_to_move", "white"])
def test_gym_observations_are_the_agents_fogged_view_through_whole_games(
    agent_color: str, perspective: str
) -> None:
    env = FogOfWar(ChessEnv(agent_color=agent_color, perspective=perspective, max_plies=120))
    color, orientation = agent_color == "white", perspective == "white" or agent_color == "white"
    rng = np.random.default_rng(1)
    hidden_seen = 0
    for episode in range(2):
        obs, _ = env.reset(seed=episode)
        done = False
        while not done:
            board = env.unwrapped.board
            assert env.observation_space.contains(obs)
            assert_fogged(obs, board, color, orientation)
            hidden_seen += len(
                chess.SquareSet(board.occupied_co[not color] & ~visible_mask(board, color))
            )
            action = int(rng.choice(np.flatnonzero(env.action_masks())))
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
        assert_fogged(obs, env.unwrapped.board, color, orientation)
    assert hidden_seen > 0  # the fog did hide something


def test_dict_mode_fogs_the_board_and_keeps_the_mask() -> None:
    env = FogOfWar(ChessEnv(obs_mode="dict"))
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["board"].shape == (8, 8, 13)
    np.testing.assert_array_equal(obs["action_mask"], env.action_masks().astype(np.int8))
    assert_fogged(obs["board"], env.unwrapped.board, chess.WHITE, chess.WHITE)


GYM_CHECKER_CONFIGS = [
    {"illegal_action": "penalize"},
    {"illegal_action": "terminate", "agent_color": "black", "obs_mode": "dict"},
    {"illegal_action": "penalize", "agent_color": "random", "perspective": "white"},
]


@pytest.mark.parametrize("kwargs", GYM_CHECKER_CONFIGS)
def test_gymnasium_and_sb3_checkers_pass(kwargs: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Gymnasium's checker reports problems as warnings
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version.*")
        check_env(FogOfWar(gym.make("chess_env/Chess-v0", **kwargs)))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*image.*")  # 0/1 planes, not an image
        sb3_check_env(FogOfWar(ChessEnv(**kwargs)))


def test_wrapper_spec_records_the_fog() -> None:
    env = FogOfWar(gym.make("chess_env/Chess-v0"))
    assert isinstance(env, GymFogOfWar)
    assert env.spec is not None and env.spec.additional_wrappers[-1].name == "GymFogOfWar"


# -- masking: unchanged, and MaskablePPO finds it ---------------------------------------------


def test_masks_are_unchanged_and_sb3_contrib_finds_them() -> None:
    from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
    from stable_baselines3.common.vec_env import DummyVecEnv

    plain, fogged = ChessEnv(), FogOfWar(ChessEnv())
    plain.reset(seed=3)
    fogged.reset(seed=3)
    for _ in range(3):
        np.testing.assert_array_equal(fogged.action_masks(), plain.action_masks())
        np.testing.assert_array_equal(get_action_masks(fogged), plain.action_masks())
        action = int(np.flatnonzero(plain.action_masks())[0])
        plain.step(action)
        fogged.step(action)
    assert is_masking_supported(fogged)
    venv = DummyVecEnv([lambda: FogOfWar(ChessEnv())])
    venv.reset()
    assert is_masking_supported(venv) and get_action_masks(venv).shape == (1, 4672)


def test_maskable_ppo_learns_a_few_steps_on_the_fog() -> None:
    torch = pytest.importorskip("torch")
    from sb3_contrib import MaskablePPO

    torch.set_num_threads(1)
    model = MaskablePPO(
        "MlpPolicy",
        FogOfWar(ChessEnv(max_plies=16)),
        n_steps=16,
        batch_size=16,
        n_epochs=1,
        policy_kwargs={"net_arch": [16]},
        seed=0,
    )
    model.learn(32)
    assert model.num_timesteps == 32


# -- PettingZoo AEC ---------------------------------------------------------------------------


def test_pettingzoo_api_test_passes() -> None:
    with pytest.warns(UserWarning):  # api_test passes reset options of its own; the env warns
        api_test(FogOfWar(aec_env()), num_cycles=200)


def test_pettingzoo_seed_test_passes() -> None:
    seed_test(lambda: FogOfWar(aec_env()), num_cycles=100)


def test_aec_observations_are_each_agents_fogged_view_and_masks_are_unchanged() -> None:
    env, plain = FogOfWar(aec_env()), aec_env()
    assert isinstance(env, AECFogOfWar)
    env.reset(seed=0)
    plain.reset(seed=0)
    rng = np.random.default_rng(2)
    for _agent in env.agent_iter(max_iter=200):
        observation, _, termination, truncation, _ = env.last()
        board = env.unwrapped.board
        for other in env.possible_agents:
            color = other == "player_0"
            seen = env.observe(other)
            assert env.observation_space(other).contains(seen)
            assert_fogged(seen["observation"], board, color, color)
            np.testing.assert_array_equal(seen["action_mask"], plain.observe(other)["action_mask"])
        action = None
        if not (termination or truncation):
            action = int(rng.choice(np.flatnonzero(observation["action_mask"])))
        env.step(action)
        plain.step(action)


# -- noise composes in either order -----------------------------------------------------------


def test_noise_outside_the_fog_is_seeded_and_stays_in_the_space() -> None:
    def first_obs(noise: float, seed: int) -> np.ndarray:
        env = GymNoiseWrapper(FogOfWar(ChessEnv()), noise=noise)
        obs, _ = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
        return obs

    clean, _ = FogOfWar(ChessEnv()).reset(seed=0)
    np.testing.assert_array_equal(first_obs(0.0, 0), clean)
    np.testing.assert_array_equal(first_obs(0.2, 0), first_obs(0.2, 0))
    assert (first_obs(0.2, 0) != clean).any()


def test_noise_inside_the_fog_never_shows_a_hidden_piece() -> None:
    env = FogOfWar(GymNoiseWrapper(ChessEnv(max_plies=60), noise=0.3))
    rng = np.random.default_rng(4)
    obs, _ = env.reset(seed=0)
    noisy = False
    for _ in range(20):
        board = env.unwrapped.board
        exact = expected_planes(board, chess.WHITE, chess.WHITE)
        np.testing.assert_array_equal(obs[..., 12], exact[..., 12])  # the fog itself is exact
        assert not obs[..., 6:12][exact[..., 12] == 0].any()  # nothing, not even noise, unseen
        noisy |= bool((obs != exact).any())
        obs, _, terminated, truncated, _ = env.step(
            int(rng.choice(np.flatnonzero(env.action_masks())))
        )
        if terminated or truncated:
            obs, _ = env.reset()
    assert noisy


# -- bad input --------------------------------------------------------------------------------


def test_wrapping_something_else_raises_a_clear_error() -> None:
    with pytest.raises(TypeError, match=r"ChessEnv.*got CartPoleEnv"):
        FogOfWar(gym.make("CartPole-v1"))
    with pytest.raises(TypeError, match=r"chess_env AEC env.*got raw_env"):
        FogOfWar(tictactoe_env())
    with pytest.raises(TypeError, match="got str"):
        FogOfWar("chess")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="got ChessTextEnv"):
        FogOfWar(gym.make("chess_env/ChessText-v0"))


def test_a_reshaped_board_observation_is_refused() -> None:
    with pytest.raises(ValueError, match=r"\(8, 8, 12\) board planes.*apply FogOfWar before"):
        FogOfWar(gym.wrappers.FlattenObservation(ChessEnv()))
