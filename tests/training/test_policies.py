"""The chess CNN policies: the conv head's logits land on encode_move's indices, and SB3 builds,
initialises and optimises that head."""

from __future__ import annotations

import random
from collections import defaultdict

import chess
import gymnasium as gym
import numpy as np
import pytest
import torch
from stable_baselines3.common.env_util import make_vec_env
from torch import nn

from chess_env import ACTION_SIZE
from chess_env.core.encoding import N_PLANES, board_to_tensor, encode_move
from chess_env.core.env import board_space
from training.config import PPOConfig
from training.evaluation import policy_logits
from training.policies import (
    ChessCNN,
    ChessCnnMaskablePolicy,
    ChessCnnPolicy,
    ConvActionHead,
    DestinationActionHead,
    is_chess_board_space,
)
from training.sb3_models import build_model

SPECIAL_FENS = [
    "r3k2r/pppq1ppp/2n2n2/3pp3/3PP3/2N2N2/PPPQ1PPP/R3K2R b KQkq - 4 8",  # castling, black
    "8/1P4k1/8/8/8/8/5p2/4K3 w - - 0 1",  # promotions, white
    "8/1P4k1/8/8/8/8/5p2/4K3 b - - 0 1",  # promotions, black
    "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  # en passant, white
    "rnbqkbnr/pppp1ppp/8/8/3Pp3/2N5/PPP1PPPP/R1BQKBNR b KQkq d3 0 3",  # en passant, black
]


def positions(games: int = 12, seed: int = 0) -> list[chess.Board]:
    """Every 7th position of seeded random games, both sides to move, and the special ones."""
    boards = [chess.Board(fen) for fen in SPECIAL_FENS]
    rng = random.Random(seed)
    for _ in range(games):
        board = chess.Board()
        for ply in range(160):
            if board.is_game_over():
                break
            if ply % 7 == 0:
                boards.append(board.copy(stack=False))
            board.push(rng.choice(list(board.legal_moves)))
    return boards


def tensor_cell(board: chess.Board, square: chess.Square) -> tuple[int, int]:
    """Where the tensor shows the piece on ``square``: the tensor of a board holding it alone."""
    alone = chess.Board(None)
    alone.set_piece_at(square, board.piece_at(square))
    alone.turn = board.turn
    ((row, column),) = np.argwhere(board_to_tensor(alone).any(axis=2))
    return int(row), int(column)


def plane_numbering_head() -> ConvActionHead:
    """One channel in, logit ``plane + 1`` on every plane of a lit square, 0 elsewhere."""
    head = ConvActionHead(channels=1)
    with torch.no_grad():
        head.planes.weight.copy_(torch.arange(1.0, N_PLANES + 1).view(N_PLANES, 1, 1, 1))
        head.planes.bias.zero_()
    return head


def test_a_lit_from_square_lights_exactly_its_moves_indices() -> None:
    head, checked, black = plane_numbering_head(), 0, 0
    for board in positions():
        by_square: dict[int, list[chess.Move]] = defaultdict(list)
        for move in board.legal_moves:
            by_square[move.from_square].append(move)
        for square, moves in by_square.items():
            row, column = tensor_cell(board, square)
            latent = torch.zeros(1, 64)
            latent[0, row * 8 + column] = 1.0
            with torch.no_grad():
                logits = head(latent)[0].numpy()
            base = encode_move(moves[0], board.turn) // N_PLANES
            expected = np.zeros(ACTION_SIZE)
            expected[base * N_PLANES : (base + 1) * N_PLANES] = np.arange(1, N_PLANES + 1)
            assert np.array_equal(logits, expected), (board.fen(), chess.square_name(square))
            for move in moves:
                index = encode_move(move, board.turn)
                assert logits[index] == index % N_PLANES + 1, (board.fen(), move.uci())
                checked += 1
                black += board.turn == chess.BLACK
    assert checked > 1000 and black > 400


def test_the_head_sums_channels_like_a_1x1_convolution() -> None:
    head = ConvActionHead(channels=3)
    latent = torch.randn(4, 3 * 64)
    grid = latent.view(4, 3, 8, 8)
    reference = torch.einsum("pc,bcrf->bprf", head.planes.weight[:, :, 0, 0], grid)
    reference = reference + head.planes.bias.view(1, -1, 1, 1)
    logits = head(latent).view(4, 8, 8, N_PLANES)  # (file, rank of the mover, plane)
    for file in range(8):
        for rank in range(8):
            row = 7 - rank  # the tensor shows the mover's rank 8 in row 0
            assert torch.allclose(logits[:, file, rank], reference[:, :, row, file], atol=1e-6)


@pytest.mark.parametrize("policy_class", [ChessCnnMaskablePolicy, ChessCnnPolicy])
def test_sb3_builds_initialises_and_optimises_the_conv_head(policy_class: type) -> None:
    policy = policy_class(board_space(), gym.spaces.Discrete(ACTION_SIZE), lambda _: 3e-4)
    assert isinstance(policy.action_net, ConvActionHead)
    assert not any(
        isinstance(m, nn.Linear) and m.out_features == ACTION_SIZE for m in policy.modules()
    )
    optimised = {id(p) for group in policy.optimizer.param_groups for p in group["params"]}
    assert optimised == {id(p) for p in policy.parameters()}
    weight = policy.action_net.planes.weight.detach().view(N_PLANES, -1)
    singular = torch.linalg.svdvals(weight)
    assert torch.allclose(singular, torch.full_like(singular, 0.01), atol=1e-6)  # SB3's gain
    assert not policy.action_net.planes.bias.any()
    logits = policy_logits(policy, np.stack([board_to_tensor(chess.Board())] * 2))
    assert logits.shape == (2, ACTION_SIZE)


def test_the_model_builder_uses_the_cnn_for_chess() -> None:
    from chess_env import ChessEnv

    vec_env = make_vec_env(ChessEnv, n_envs=1, seed=0)
    model = build_model(PPOConfig(n_steps=8, batch_size=8), vec_env, masked=True)
    assert type(model.policy) is ChessCnnMaskablePolicy
    assert isinstance(model.policy.features_extractor, ChessCNN)
    vec_env.close()


def test_the_head_needs_the_board_features_unmixed() -> None:
    with pytest.raises(ValueError, match="pi=\\[\\]"):
        ChessCnnPolicy(
            board_space(), gym.spaces.Discrete(ACTION_SIZE), lambda _: 3e-4, net_arch=[64]
        )


def test_the_cnn_reads_only_the_board() -> None:
    assert is_chess_board_space(board_space())
    assert is_chess_board_space(gym.spaces.Dict({"board": board_space()}))
    assert not is_chess_board_space(gym.spaces.Box(0, 1, shape=(4,)))
    with pytest.raises(ValueError, match="features='mlp'"):
        ChessCNN(gym.spaces.Box(0, 1, shape=(4,)))
    with pytest.raises(ValueError, match="positive"):
        ChessCNN(board_space(), channels=0)


@pytest.mark.parametrize(
    ("base", "more", "added"),
    [({}, {"attacks": True}, 2), ({"attacks": True}, {"attacks": True, "checks": True}, 3)],
)
def test_extra_input_planes_come_after_the_ones_before(
    base: dict[str, bool], more: dict[str, bool], added: int
) -> None:
    """Attack maps after the board, check squares after those: with the new planes' weights
    zeroed, the network is the smaller one with its weights."""
    torch.manual_seed(0)
    plain = ChessCNN(board_space(), channels=8, **base)
    seeing = ChessCNN(board_space(), channels=8, **more)
    rest = {k: v for k, v in plain.state_dict().items() if not k.startswith("convolutions.0.")}
    seeing.load_state_dict(rest, strict=False)
    first, before = seeing.convolutions[0], plain.convolutions[0].in_channels
    assert first.in_channels == before + added
    with torch.no_grad():
        first.weight.copy_(
            torch.cat([plain.convolutions[0].weight, torch.zeros(8, added, 3, 3)], 1)
        )
        first.bias.copy_(plain.convolutions[0].bias)
    boards = torch.as_tensor(
        np.stack(
            [
                board_to_tensor(chess.Board()),
                board_to_tensor(
                    chess.Board("r3k2r/pPp2ppp/8/3pP3/8/8/PPP2PPP/R3K2R w KQkq d6 0 1")
                ),
            ]
        )
    )
    torch.testing.assert_close(seeing(boards), plain(boards))
    with torch.no_grad():
        first.weight[:, before:] = 1.0  # the planes do reach the network
    assert not torch.allclose(seeing(boards), plain(boards))


def square_cell(turn: chess.Color, square: chess.Square) -> tuple[int, int]:
    """Where the tensor of a board with ``turn`` to move shows ``square``."""
    marker = chess.Board(None)
    marker.set_piece_at(square, chess.Piece(chess.KING, turn))
    marker.turn = turn
    return tensor_cell(marker, square)


def test_the_destination_head_adds_the_landing_square_score_of_the_piece_moving() -> None:
    """Checked move by move with python-chess: each legal move's logit is the plain head's plus
    the destination map of the piece it moves, read at the square it lands on."""
    torch.manual_seed(0)
    channels, checked, kinds = 3, 0, set()
    head = DestinationActionHead(channels)
    plain = ConvActionHead(channels)
    plain.load_state_dict({k: v for k, v in head.state_dict().items() if k.startswith("planes.")})
    for board in positions(games=6):
        tensor = torch.as_tensor(board_to_tensor(board)).permute(2, 0, 1).float()
        features = torch.randn(1, channels * 64)
        latent = torch.cat([features, tensor[None, :6].flatten(1)], dim=1)
        with torch.no_grad():
            added = (head(latent) - plain(features))[0]
            scores = head.destinations(features.view(1, channels, 8, 8))[0]
        for move in board.legal_moves:
            kind = board.piece_type_at(move.from_square) - 1
            row, column = square_cell(board.turn, move.to_square)
            expected = scores[kind, row, column]
            actual = added[encode_move(move, board.turn)]
            assert torch.isclose(actual, expected, atol=1e-5), (board.fen(), move.uci())
            checked, kinds = checked + 1, kinds | {kind}
    assert checked > 500 and kinds == set(range(6))


def test_the_destination_network_builds_saves_and_loads(tmp_path) -> None:
    from chess_env import ChessEnv
    from training.sb3_models import load_model

    vec_env = make_vec_env(ChessEnv, n_envs=1, seed=0)
    config = PPOConfig(n_steps=8, batch_size=8, features="chess_cnn_destinations")
    model = build_model(config, vec_env, masked=True)
    vec_env.close()
    policy = model.policy
    assert isinstance(policy.action_net, DestinationActionHead)
    assert policy.features_extractor.features_dim == (64 + 6) * 64
    optimised = {id(p) for group in policy.optimizer.param_groups for p in group["params"]}
    assert id(policy.action_net.destinations.weight) in optimised
    boards = np.stack([board_to_tensor(board) for board in positions(games=1)[:6]])
    with torch.no_grad():
        for parameter in policy.parameters():  # SB3's 0.01 gain hides a wrong load
            parameter.add_(torch.randn_like(parameter) * 0.1)
    model.save(tmp_path / "model.zip")
    loaded = load_model(str(tmp_path / "model.zip"))
    assert isinstance(loaded.policy.action_net, DestinationActionHead)
    torch.testing.assert_close(policy_logits(loaded.policy, boards), policy_logits(policy, boards))
