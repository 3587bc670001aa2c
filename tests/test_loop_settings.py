"""The cooperative loop's compile settings (streamrank/rank/gpu/frontier_loop.py's module
constants, which tests and profiling scripts may set), checked before anything is compiled: they
run without a GPU."""

import pytest

from streamrank.errors import InvalidArgumentError
from streamrank.rank.gpu import frontier_loop


def test_the_defaults_pass():
    """The constants the loop is compiled with pass the check (4 resident blocks per multiprocessor
    in self-loop mode, 3 in uniform mode)."""
    f = frontier_loop
    assert f._LOOP_MIN_BLOCKS == (4, 3)
    f._check_knobs(f._LOOP_GROUP, f._LOOP_BLOCK_SOURCE, f._LOOP_FOLD, f._LOOP_HALVES, f._LOOP_ARGS_SHARED,
                   tuple(f._LOOP_MIN_BLOCKS))


@pytest.mark.parametrize("args,name", [((3, 64, 1, -1), "_LOOP_GROUP"),
                                       ((8, 0, 1, -1), "_LOOP_BLOCK_SOURCE"),
                                       ((8, 64, 3, -1), "_LOOP_FOLD"),
                                       ((8, 64, 1, 2), "_LOOP_HALVES"),
                                       ((8, 64, 1, -1, 8), "_LOOP_ARGS_SHARED"),
                                       ((8, 64, 1, -1, 5, (4, 9)), "_LOOP_MIN_BLOCKS"),
                                       ((8, 64, 1, -1, 5, (0, 3)), "_LOOP_MIN_BLOCKS"),
                                       ((8, 64, 1, -1, 5, (4,)), "_LOOP_MIN_BLOCKS")])
def test_loop_settings_refused(args, name):
    with pytest.raises(InvalidArgumentError, match=name):
        frontier_loop._check_knobs(*args)
