"""AutoPolicy: the per-batch choice of algorithm="auto" (no backend needed: results are stand-ins)."""

from types import SimpleNamespace

import pytest

from streamrank.rank.auto_policy import AutoPolicy
from streamrank.errors import InvalidArgumentError

N = 1000  # vertices


def changes(size):
    return SimpleNamespace(num_insertions=size, num_deletions=0)


def result(algorithm, affected=0, iterations=10):
    return SimpleNamespace(algorithm=algorithm, affected_total=affected, iterations=iterations)


def test_a_flood_sends_similar_batches_to_warm_sweeps_and_dfp_is_probed_again():
    pol = AutoPolicy(probe_every=3)
    assert pol.choose(changes(100)) == "auto"
    pol.observe(result("dfp>warm"), changes(100), N)  # the GPU switched within the batch
    assert pol.choose(changes(30)) == "warm"  # at least a quarter of the flooding batch
    assert pol.choose(changes(20)) == "auto"  # smaller: DF-P again
    for _ in range(3):
        assert pol.choose(changes(100)) == "warm"
        pol.observe(result("warm", N * 5, 5), changes(100), N)
    assert pol.choose(changes(100)) == "auto"  # the probe after probe_every warm batches
    pol.observe(result("dfp", affected=100), changes(100), N)  # DF-P stayed local: no flood
    assert pol.flood_size is None and pol.choose(changes(100)) == "auto"


def test_cpu_flood_is_measured_against_the_warm_sweeps_seen():
    """Without an in-batch switch (the CPU), DF-P floods when it updates more vertices than the
    warm sweeps would: flood_sweeps full sweeps at first, then the last warm batch's sweeps."""
    pol = AutoPolicy(probe_every=2, flood_sweeps=3)
    pol.observe(result("dfp", affected=10 * N), changes(50), N)  # 10 sweeps' worth > 3
    assert pol.choose(changes(50)) == "warm"
    pol.observe(result("warm", affected=71 * N, iterations=71), changes(50), N)  # warm needed 71 sweeps
    pol.observe(result("warm", affected=71 * N, iterations=71), changes(50), N)
    assert pol.choose(changes(50)) == "auto"  # probe
    pol.observe(result("dfp", affected=10 * N), changes(50), N)  # 10 < 71 sweeps: DF-P is cheaper
    assert pol.flood_size is None and pol.choose(changes(50)) == "auto"
    pol.observe(result("dfp", affected=80 * N), changes(50), N)  # past the warm sweeps: flooded
    assert pol.choose(changes(50)) == "warm"


def test_state_round_trip_gives_the_same_choices():
    pol = AutoPolicy()
    pol.observe(result("dfp>warm"), changes(100), N)
    pol.observe(result("warm", iterations=7), changes(100), N)
    other = AutoPolicy()
    other.load_state(pol.state())
    assert (other.flood_size, other.warm_streak, other.warm_sweeps, other.flood_updates) == (100, 1, 7, None)
    for size in (10, 30, 100):
        assert other.choose(changes(size)) == pol.choose(changes(size))
    fresh = AutoPolicy()
    fresh.load_state(AutoPolicy().state())
    assert (fresh.flood_size, fresh.warm_streak, fresh.warm_sweeps) == (None, 0, None)
    with pytest.raises(InvalidArgumentError):
        fresh.load_state({"flood_size": "x"})


def test_arguments_are_checked():
    with pytest.raises(InvalidArgumentError):
        AutoPolicy(probe_every=0)
    with pytest.raises(InvalidArgumentError):
        AutoPolicy(flood_sweeps=0)


def test_engine_defaults_to_auto_and_a_restored_engine_chooses_the_same():
    """The policy's memory is part of Engine.state(): a restored CPU engine makes the same choices
    and ends with the same ranks, bit for bit, as the uninterrupted one."""
    import numpy as np

    from streamrank.batch import EdgeBatch
    from streamrank.engine import Engine

    rng = np.random.default_rng(4)
    eng = Engine("cpu")
    assert eng.algorithm == "auto"
    eng.load_edges(rng.integers(0, 200, 1500), rng.integers(0, 200, 1500))
    batches = [EdgeBatch.from_arrays(rng.integers(0, 220, 30), rng.integers(0, 220, 30), rng.random(30) < 0.8)
               for _ in range(24)]
    ran = [eng.apply(b).rank.algorithm for b in batches[:12]]
    assert "warm" in ran  # floods happened: the choice has memory to restore
    restored = Engine.from_state(eng.state(), device="cpu")
    assert restored.policy.state() == eng.policy.state()
    ran_a = [eng.apply(b).rank.algorithm for b in batches[12:]]
    ran_b = [restored.apply(b).rank.algorithm for b in batches[12:]]
    assert ran_a == ran_b
    assert np.array_equal(eng.ranks()[1], restored.ranks()[1])


def test_before_any_warm_batch_dfp_iterations_estimate_the_warm_sweeps():
    """sx-mathoverflow on an H100: DF-P updated 7.6 |V| vertices in 42 iterations where warm
    sweeps needed 43 full sweeps and took 1.7x longer: not a flood. The same batch with 30 |V|
    updates is one (half the iterations, 21 sweeps, is the bound)."""
    pol = AutoPolicy()
    pol.observe(result("dfp", affected=int(7.6 * N), iterations=42), changes(24), N)
    assert pol.flood_size is None and pol.choose(changes(24)) == "auto"
    pol.observe(result("dfp", affected=30 * N, iterations=42), changes(24), N)
    assert pol.choose(changes(24)) == "warm"


def test_a_misjudged_flood_costs_one_warm_batch():
    """sx-mathoverflow, uniform mode, H200: DF-P updated 18 |V| vertices in 34 iterations and was
    called flooded (half its iterations, 17 sweeps, is the bound); the warm batch then needed 80
    sweeps. The next batch is DF-P's again, not the remaining probe_every - 1 warm ones."""
    pol = AutoPolicy(probe_every=8)
    pol.observe(result("dfp", affected=18 * N, iterations=34), changes(506), N)
    assert pol.choose(changes(506)) == "warm"
    pol.observe(result("warm", affected=80 * N, iterations=80), changes(506), N)
    assert pol.flood_size is None and pol.choose(changes(506)) == "auto"
    pol.observe(result("dfp", affected=18 * N, iterations=34), changes(506), N)  # 18 < 80 sweeps
    assert pol.choose(changes(506)) == "auto"


def test_a_real_flood_keeps_its_warm_batches():
    """Warm sweeps cheaper than the flooding DF-P batch (R-MAT: a batch reaches the hubs): the
    streak runs to the probe; an in-batch switch is not second-guessed either."""
    pol = AutoPolicy(probe_every=3)
    pol.observe(result("dfp", affected=40 * N, iterations=30), changes(100), N)
    for _ in range(3):
        assert pol.choose(changes(100)) == "warm"
        pol.observe(result("warm", affected=12 * N, iterations=12), changes(100), N)
    assert pol.choose(changes(100)) == "auto"  # the probe
    pol.observe(result("dfp>warm", affected=3 * N), changes(100), N)
    assert pol.choose(changes(100)) == "warm"
    pol.observe(result("warm", affected=12 * N, iterations=12), changes(100), N)
    assert pol.choose(changes(100)) == "warm"
    restored = AutoPolicy()
    restored.load_state(pol.state())
    assert restored.state() == pol.state()
