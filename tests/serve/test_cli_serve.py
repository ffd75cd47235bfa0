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


def test_the_limits_are_server_options_passed_to_the_settings():
    """``--max-body``, ``--max-sync-body`` and ``--solver-nodes`` reach :class:`ServeSettings`
    (limits are the server's, never a client's); the synchronous limit is capped by the job's."""
    import argparse

    from robustce.cli.serve import _add_serve, _settings
    from robustce.serve.settings import ServeSettings, sync_body_limit

    parser = argparse.ArgumentParser()
    _add_serve(parser.add_subparsers())
    args = parser.parse_args(["serve", "--max-body", "5000", "--max-sync-body", "3000",
                              "--solver-nodes", "77"])
    settings = _settings(args)
    assert (settings.max_body_bytes, settings.max_sync_body_bytes, settings.solver_nodes) == (5000, 3000, 77)
    assert sync_body_limit(settings) == 3000
    assert sync_body_limit(ServeSettings(max_body_bytes=1000, max_sync_body_bytes=3000)) == 1000
    defaults = _settings(parser.parse_args(["serve"]))
    assert (defaults.max_body_bytes, defaults.max_sync_body_bytes, defaults.solver_nodes) == (
        ServeSettings().max_body_bytes, ServeSettings().max_sync_body_bytes, ServeSettings().solver_nodes)


def test_a_solver_node_limit_below_one_is_refused(capsys):
    assert main(["serve", "--solver-nodes", "0"]) == 2
    assert "solver_nodes" in capsys.readouterr().err
