"""sweep, tune and explain pick their output format by extension, with one check
(runio.safe_io.output_type): a wrong extension exits 2 before any work, names
the user's extension and the ones allowed, and writes nothing."""

from __future__ import annotations

import pytest

from model.errors import InputError
from runio.safe_io import REPORT_TYPES, output_type
from cli.main import main


def test_output_type_is_the_lower_case_extension():
    assert output_type("a/B.HTML") == ".html"
    assert output_type("x.htm") == ".htm"
    assert output_type("r.csv", (".csv",)) == ".csv"
    with pytest.raises(InputError) as e:
        output_type("plan.txt")
    msg = str(e.value)
    assert "'.txt'" in msg and ".csv, .json or .html" in msg and e.value.field == "--out"
    with pytest.raises(InputError, match="no extension"):
        output_type("result")
    with pytest.raises(InputError, match="use a .csv file name"):
        output_type("r.json", (".csv",))
    assert set(REPORT_TYPES) == {".csv", ".json", ".html", ".htm"}


@pytest.mark.parametrize("argv", [
    ["sweep", "--set", "servers=4,8"],
    ["tune", "--vary", "servers=4:8", "--generations", "1"],
    ["explain"],
])
def test_each_command_refuses_a_wrong_extension_before_work(argv, tmp_path, capsys):
    out = tmp_path / "result.txt"
    assert main([*argv, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'.txt'" in err and ".csv, .json or .html" in err and "Traceback" not in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
