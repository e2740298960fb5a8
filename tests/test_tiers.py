"""The deep list (tests/deep.txt) names real tests, and leaves every module some test in `make test`."""
from pathlib import Path

import pytest
import tiers
from tiers import Entry, _durations, modules, plan, read_list

TESTS = Path(__file__).parent
pytest_plugins = ["pytester"]


def test_every_listed_test_exists_and_every_module_keeps_a_quick_test():
    entries = read_list()
    by_module = modules()
    known = set().union(*by_module.values())
    assert [test for test in entries if test not in known] == [], "tests/deep.txt names tests that do not exist"
    whole = {test for test, entry in entries.items() if not entry.step}
    all_deep = [name for name, tests in by_module.items() if tests and tests <= whole]
    assert all_deep == [], "every test of these modules is deep: make test would check nothing of theirs"


def test_a_line_that_does_not_parse_is_refused_by_its_number(tmp_path):
    listing = tmp_path / "deep.txt"
    listing.write_text("# fine\ntests/test_a.py::test_b  sample 1/4\ntests/test_a.py test_c\n")
    with pytest.raises(ValueError, match="line 3"):
        read_list(listing)
    listing.write_text("tests/test_a.py::test_b  sample 1/1\n")
    with pytest.raises(ValueError, match="keeps every case"):
        read_list(listing)
    listing.write_text("tests/test_a.py::test_b  sample 1/4  # a family\n")
    assert read_list(listing) == {"tests/test_a.py::test_b": Entry("tests/test_a.py::test_b", 4)}


def test_the_plan_samples_costly_families_moves_costly_tests_and_keeps_each_modules_quickest(monkeypatch):
    monkeypatch.setattr(tiers, "SINGLE_LIMIT", 1.5)
    monkeypatch.setattr(tiers, "FAMILY_KEEPS", 8)
    durations = "\n".join([
        *(f"0.40s call     tests/test_a.py::test_family[case{i}]" for i in range(24)),
        "0.01s call     tests/test_a.py::test_cheap",
        "9.00s call     tests/test_a.py::test_costly",
        "3.00s call     tests/test_b.py::test_only_costly_one",
        "5.00s call     tests/test_b.py::test_costlier",
        "0.50s setup    tests/test_b.py::test_costlier",
    ])
    entries = {e.test: e for e in plan(_durations(durations))}
    assert entries == {
        "tests/test_a.py::test_family": Entry("tests/test_a.py::test_family", 3),
        "tests/test_a.py::test_costly": Entry("tests/test_a.py::test_costly"),
        "tests/test_b.py::test_costlier": Entry("tests/test_b.py::test_costlier"),
    }


def test_a_sampled_family_keeps_every_nth_case_by_id_whatever_the_order(pytester):
    pytester.makeconftest("pytest_plugins = ['tiers']\n")
    pytester.makeini("[pytest]\ndeep_list = deep.txt\nmarkers = deep: the deep tier\n")
    pytester.makefile(".txt", deep="test_fam.py::test_f  sample 1/3\n")
    pytester.makepyfile(test_fam="import pytest\n@pytest.mark.parametrize('n', [5, 1, 7, 0, 3, 8, 2, 6, 4])\n"
                                 "def test_f(n): pass\n")
    quick = pytester.runpytest("-m", "not deep", "-p", "no:randomly", "-q", "--collect-only")
    deep = pytester.runpytest("-m", "deep", "-p", "no:randomly", "-q", "--collect-only")
    assert len([line for line in deep.outlines if "test_f[" in line]) == 6
    assert sorted(line for line in quick.outlines if "test_f[" in line) == [
        "test_fam.py::test_f[0]", "test_fam.py::test_f[3]", "test_fam.py::test_f[6]"]


def test_the_house_rules_stay_in_make_test_however_long_they_take():
    """A slow house rule is still planned quick, and the list on disk keeps none of them deep."""
    slow = {test: [5.0] for test in tiers.ALWAYS_QUICK}
    slow["tests/test_house.py::test_some_other_rule"] = [5.0]
    assert [e.test for e in plan(slow)] == ["tests/test_house.py::test_some_other_rule"]
    assert tiers.ALWAYS_QUICK & set(read_list()) == set()
    assert tiers.ALWAYS_QUICK <= set().union(*modules().values()), "ALWAYS_QUICK names tests that do not exist"
