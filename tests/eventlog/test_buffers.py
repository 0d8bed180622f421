"""The roll's position column built from buffers holds ``position_key`` of each position."""

from __future__ import annotations

import random

import pytest

from cdc_backfill.eventlog import buffers
from cdc_backfill.eventlog.buffers import position_key_array
from cdc_backfill.events.positions import position_key


def random_positions(rng: random.Random, n: int) -> list[tuple[int, ...]]:
    sizes = (0, 1, 8, 31, 32, 63, 64)
    return [tuple(rng.getrandbits(rng.choice(sizes)) for _ in range(rng.randint(0, 4))) for _ in range(n)]


def test_position_keys_are_position_key_of_each_position() -> None:
    positions = [*random_positions(random.Random(7), 3000), (0,), (), (2**64 - 1, 2**63)]
    expected = [position_key(p) for p in positions]
    assert position_key_array(positions).to_pylist() == expected
    assert buffers.position_keys(positions) == buffers.position_keys_py(positions)


def test_positions_beyond_64_bits_take_the_python_path_with_the_same_keys() -> None:
    positions = [(1, 2), (2**64, 3), (2**70 + 5,)]
    assert position_key_array(positions).to_pylist() == [position_key(p) for p in positions]
    assert buffers.position_keys(positions) is None
    with pytest.raises(ValueError, match="negative"):
        buffers.position_keys([(1, -1)])
    with pytest.raises(ValueError, match="negative"):
        buffers.position_keys_py([(1, -1)])
