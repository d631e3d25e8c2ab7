"""The soak's check of a batch output (python -m tests.robustness.soak check)."""

from __future__ import annotations

import pytest

from .soak import check_output, main


def test_check_reads_the_note_column_as_text_and_every_prediction_as_a_number(tmp_path, capsys):
    ok = tmp_path / "ok.csv"
    ok.write_text("id,pred_mops,pred_mops_lo,pred_wait_us,pred_note\n"
                  "P1,0.5,0.4,1|2,\n"
                  "P2,0.01,,3|4,the rack sits where its load balance jumps\n")
    assert check_output(str(ok)) == 0
    out = capsys.readouterr().out
    assert "0 not finite" in out and "1 rows at a jump" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,pred_mops,pred_wait_us,pred_note\nP1,nan,1|2,\nP2,0.1,3|inf,\n")
    assert check_output(str(bad)) == 1
    assert "2 not finite" in capsys.readouterr().out


def test_check_of_an_output_without_rows_fails_with_a_message(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("id,pred_mops,partial\n")
    assert check_output(str(empty)) == 1
    assert "no rows predicted" in capsys.readouterr().out


def test_scenario_soak_over_two_processes_solves_the_same_scenarios():
    """``soak scenarios --jobs 2`` draws every scenario first, so it solves
    the same ones as one process and reports the same counts (run as a user
    runs it: the worker processes import the soak by its module name)."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]

    def run(*extra):
        out = subprocess.run([sys.executable, "-m", "tests.robustness.soak", "scenarios", "--n", "4",
                              "--seed", "3", "--batch", "2", *extra], cwd=root, capture_output=True,
                             text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-2000:]
        return out.stdout.splitlines()
    one, two = run(), run("--jobs", "2")
    tail = lambda lines: lines[-1].split(": ", 1)[1]                    # noqa: E731
    assert tail(one) == tail(two) == "{'solved': 4, 'violations': 0, 'exceptions': 0, 'slow': 0}"
    assert [ln.split(" in ")[0] for ln in one] == [ln.split(" in ")[0] for ln in two]


def test_simulator_soak_refuses_bad_arguments_and_runs_a_few_racks(capsys):
    for argv in (["--seconds", "-1"], ["--seconds", "0"], ["--seconds", "abc"], ["--n", "0"]):
        with pytest.raises(SystemExit) as e:
            main(["simulator", *argv])
        assert e.value.code == 2
        err = capsys.readouterr().err
        assert "--seconds" in err or "--n" in err
    assert main(["simulator", "--n", "3", "--seed", "2", "--seconds", "0.01"]) == 0
    assert "DONE 3 scenarios" in capsys.readouterr().out
