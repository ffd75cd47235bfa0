"""``robustce serve`` argument errors: one line, exit 2, before any training or binding."""

from __future__ import annotations

from robustce.cli import main


def test_bad_arguments_stop_with_one_line(tmp_path, capsys):
    short = tmp_path / "token"
    short.write_text("abc\n")
    assert main(["serve", "--token-file", str(tmp_path / "missing")]) == 2
    assert "--token-file" in capsys.readouterr().err
    assert main(["serve", "--token-file", str(short)]) == 2
    assert "at least 16 characters" in capsys.readouterr().err
    assert main(["serve", "--port", "70000"]) == 2
    assert "--port" in capsys.readouterr().err
    assert main(["serve", "--workers", "0"]) == 2
    assert "workers" in capsys.readouterr().err
    assert main(["serve", "--model", str(tmp_path)]) == 2
    assert "holds no saved model" in capsys.readouterr().err
    assert main(["serve", "--in-process", "nearest_neighbour,dice"]) == 2
    assert "--in-process: 'dice' is not a served method" in capsys.readouterr().err
