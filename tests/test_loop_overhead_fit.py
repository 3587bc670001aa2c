"""benchmarks/profiling/_overhead.py: the fixed cost of a loop iteration as the intercept of the
least-squares line of iteration time against frontier size, on synthetic iterations."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("_overhead", ROOT / "benchmarks" / "profiling" / "_overhead.py")
overhead = importlib.util.module_from_spec(_spec)
sys.modules["_overhead"] = overhead  # its dataclass looks its module up there
_spec.loader.exec_module(overhead)


def test_intercept_and_slope_of_a_noisy_line():
    rng = np.random.default_rng(1)
    n = rng.integers(1, 9000, 400)
    t = 6.0 + 1.5e-3 * n + rng.normal(0, 0.3, n.size)  # 6 us fixed, 1.5 us per 1,000 vertices
    fit = overhead.fit_fixed_cost(n, t)
    assert fit.iterations == 400
    assert fit.intercept_us == pytest.approx(6.0, abs=0.15)
    assert fit.slope_us_per_1000 == pytest.approx(1.5, abs=0.05)
    assert fit.low_us < fit.intercept_us < fit.high_us and fit.high_us - fit.low_us < 0.5


def test_iterations_over_the_limit_are_left_out():
    n = np.array([10, 500, 2000, 8000, 20000, 50000])
    t = np.array([7.0, 7.5, 9.0, 15.0, 200.0, 900.0])  # the large frontiers would bend the line
    fit = overhead.fit_fixed_cost(n, t, draws=200)
    assert fit.iterations == 4
    assert fit.intercept_us == pytest.approx(np.polyfit(n[:4], t[:4], 1)[1])


@pytest.mark.parametrize("n, t, match", [
    ([1, 2], [1.0, 2.0, 3.0], "one length"),
    ([5, 5, 5], [1.0, 2.0, 3.0], "too few"),
    ([1, 2, 20000], [1.0, 2.0, 3.0], "too few"),
])
def test_refuses_what_cannot_be_fitted(n, t, match):
    with pytest.raises(ValueError, match=match):
        overhead.fit_fixed_cost(n, t)


PLOT = ROOT / "benchmarks" / "profiling" / "fixed_cost_plot.py"


def _csv(path, n, r, d):
    np.savetxt(path, np.column_stack([n, r, d]), fmt=["%d", "%.3f", "%.3f"], delimiter=",",
               header="frontier,R_us,decide_us", comments="")


def test_the_plot_command_prints_each_fit_and_draws(tmp_path):
    rng = np.random.default_rng(2)
    n = rng.integers(1, 9000, 300)
    _csv(tmp_path / "a.csv", n, 5.0 + 1e-3 * n, np.full(n.size, 1.0))  # a = 6 us, b = 1 us per 1,000
    _csv(tmp_path / "b.csv", n, 6.0 + 2e-3 * n, np.full(n.size, 1.0))
    out = subprocess.run([sys.executable, str(PLOT), str(tmp_path / "p.png"), f"one={tmp_path / 'a.csv'}",
                          f"two={tmp_path / 'b.csv'}"], capture_output=True, text=True, check=True).stdout
    rows = out.splitlines()
    assert rows[1].startswith("one | 300 | 6.0 (6.0-6.0) | 1.00 |")
    assert rows[2].startswith("two | 300 | 7.0 (7.0-7.0) | 2.00 |")
    assert (tmp_path / "p.png").stat().st_size > 10_000


def test_the_plot_command_refuses_a_file_that_is_not_its_csv(tmp_path):
    (tmp_path / "x.csv").write_text("frontier,R_us\n1,2\n")
    res = subprocess.run([sys.executable, str(PLOT), str(tmp_path / "p.png"), f"x={tmp_path / 'x.csv'}"],
                         capture_output=True, text=True)
    assert res.returncode != 0 and "frontier, R_us, decide_us" in res.stderr
