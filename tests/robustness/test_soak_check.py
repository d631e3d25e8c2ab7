"""The soak's check of a batch output (python -m tests.robustness.soak check)."""

from __future__ import annotations

from .soak import check_output


def test_check_reads_the_warning_column_as_text_and_every_prediction_as_a_number(tmp_path, capsys):
    ok = tmp_path / "ok.csv"
    ok.write_text("id,pred_mops,pred_mops_lo,pred_wait_us,pred_warning\n"
                  "P1,0.5,0.4,1|2,\n"
                  "P2,0.01,,3|4,the analytic fixed point did not settle (1600 steps)\n")
    assert check_output(str(ok)) == 0
    out = capsys.readouterr().out
    assert "0 not finite" in out and "1 rows flagged unsettled" in out
    bad = tmp_path / "bad.csv"
    bad.write_text("id,pred_mops,pred_wait_us,pred_warning\nP1,nan,1|2,\nP2,0.1,3|inf,\n")
    assert check_output(str(bad)) == 1
    assert "2 not finite" in capsys.readouterr().out


def test_check_of_an_output_without_rows_fails_with_a_message(tmp_path, capsys):
    empty = tmp_path / "empty.csv"
    empty.write_text("id,pred_mops,partial\n")
    assert check_output(str(empty)) == 1
    assert "no rows predicted" in capsys.readouterr().out
