import pytest
from hypothesis import given
from hypothesis import strategies as st

from backends.ranges import Window, compress, compress_runs, expand, parse_runs, runs_of, split_windows


def test_compress_runs_and_singles():
    assert compress([99, 5, 6, 7, 8, 9, 10, 1, 2, 2]) == "1-2,5-10,99"
    assert compress([]) == ""


def test_expand_reads_slurm_expressions():
    assert expand("1-2,5-10,99") == (1, 2, 5, 6, 7, 8, 9, 10, 99)
    assert expand("3-5%2") == (3, 4, 5)
    assert expand("6-24:3%1") == (6, 9, 12, 15, 18, 21, 24)     # evenly spaced values, as Slurm writes them
    assert expand("1,7-21:7") == (1, 7, 14, 21)
    for wrong in ("1:2", "1-9:", "1-9:0", "1-9:x"):
        with pytest.raises(ValueError):
            expand(wrong)


@given(st.sets(st.integers(min_value=0, max_value=5000)))
def test_expand_inverts_compress(values):
    assert expand(compress(values)) == tuple(sorted(values))


def test_parse_runs_reads_ranges_without_expanding_them():
    assert parse_runs("9,1-4") == ((1, 4), (9, 9))
    assert parse_runs("1-1000000000000") == ((1, 1000000000000),)      # (expanded, it would not end)
    assert parse_runs("") == parse_runs("  ") == ()
    for wrong in ("1:2", "4-1", "x", "1,,2", "-3", "6-24:3"):     # a step's values are no run
        with pytest.raises(ValueError):
            parse_runs(wrong)


@given(st.sets(st.integers(min_value=0, max_value=5000)))
def test_parse_runs_inverts_compress_runs(values):
    runs = runs_of(sorted(values))
    assert parse_runs(compress_runs(runs)) == runs


def test_windows_match_the_design_example():
    windows = split_windows([1, 2, 1005, 1006, 2999], 1000)
    assert [(w.expression, w.offset) for w in windows] == [("1-2", 0), ("5-6", 1000), ("999", 2000)]


def test_no_split_below_the_limit():
    assert split_windows([1, 1000], 1001) == (Window(0, (1, 1000)),)


@given(st.sets(st.integers(min_value=0, max_value=10_000), min_size=1), st.integers(min_value=1, max_value=3000))
def test_windows_cover_everything_below_the_limit(values, limit):
    windows = split_windows(values, limit)
    assert sorted(v for w in windows for v in w.values) == sorted(values)
    assert all(0 <= p < limit for w in windows for p in w.physical)

