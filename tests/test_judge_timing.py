"""The physics floor (issue 26): a timing below half a fill of the same bytes, timed in the same
run, is implausible; at or above it, it is not; only cells timed ok are judged, roofs never.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from harness.runs import flags

SHARE = flags.IMPLAUSIBLE_SHARE


@pytest.mark.parametrize("median_share, implausible", [
    (0.9 * SHARE, True), (0.999 * SHARE, True), (SHARE, False), (1.1 * SHARE, False), (3.0, False),
])
def test_a_time_below_half_a_fill_is_implausible(median_share, implausible):
    fill = 2e-3
    found = flags.implausible_flag(median_share * fill, fill)
    assert found.startswith("implausible: ") == implausible, found
    if implausible:
        assert f"{1 / median_share:.3g}x faster than a fill of the same bytes" in found
        assert f"below {SHARE:g}x the memory roof" in found


@pytest.mark.parametrize("median, fill", [(0.0, 1e-3), (-1e-6, 1e-3), (1e-6, 0.0), (1e-6, -1.0),
                                          (math.nan, 1e-3), (1e-6, math.nan)])
def test_no_timing_or_no_fill_is_no_finding(median, fill):
    assert flags.implausible_flag(median, fill) == ""


def test_only_implementation_cells_timed_ok_are_flagged_and_other_flags_kept():
    frame = pd.DataFrame({
        "status": ["ok", "ok", "ok", "error", "ok", "ok"],
        "median_s": [1e-6, 1e-6, 1e-6, 1e-6, 1e-3, 1e-6],
        "is_roof": [False, "True", "1", False, False, "false"],
        "flags": ["load: busy", "", None, "", "", None],
    })
    fill = pd.Series([1e-3] * 6)
    out = flags.with_implausible(frame, fill)
    assert out[0].startswith("load: busy; implausible: ")
    assert list(out[1:5]) == ["", "", "", ""]          # roofs, an error row, a plausible time
    assert out[5].startswith("implausible: ")
    assert frame["flags"][0] == "load: busy" and pd.isna(frame["flags"][5])   # not changed in place
