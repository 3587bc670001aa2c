"""The cooperative loop's compile settings (streamrank/rank/gpu/frontier_loop.py), checked before
anything is compiled: they run without a GPU."""

import os

import pytest

from streamrank.errors import InvalidArgumentError
from streamrank.rank.gpu import frontier_loop


def test_min_blocks_setting():
    """STREAMRANK_LOOP_MIN_BLOCKS: blocks per multiprocessor for self-loop and uniform mode, or one
    number for both; the default keeps 4 resident in self-loop mode and 3 in uniform mode."""
    assert frontier_loop._min_blocks("4,3") == (4, 3)
    assert frontier_loop._min_blocks(" 2 , 5 ") == (2, 5)
    assert frontier_loop._min_blocks("3") == (3, 3)
    if "STREAMRANK_LOOP_MIN_BLOCKS" not in os.environ:
        assert frontier_loop._LOOP_MIN_BLOCKS == "4,3"
    for bad in ("", "four", "4,3,2", "0", "4,9", "4;3"):
        with pytest.raises(InvalidArgumentError, match="STREAMRANK_LOOP_MIN_BLOCKS"):
            frontier_loop._min_blocks(bad)


@pytest.mark.parametrize("args,knob", [((3, 64, 1, -1), "STREAMRANK_LOOP_GROUP"),
                                       ((8, 0, 1, -1), "STREAMRANK_LOOP_BLOCK_SOURCE"),
                                       ((8, 64, 3, -1), "STREAMRANK_LOOP_FOLD"),
                                       ((8, 64, 1, 2), "STREAMRANK_LOOP_HALVES"),
                                       ((8, 64, 1, -1, 8), "STREAMRANK_LOOP_ARGS_SHARED")])
def test_loop_knobs_refused(args, knob):
    frontier_loop._check_knobs(8, 64, 1, -1)  # the defaults pass
    with pytest.raises(InvalidArgumentError, match=knob):
        frontier_loop._check_knobs(*args)
