"""The server's settings refuse a solver node limit below 1 and a bearer token shorter than 16
characters, at construction — before anything is served (mutants
``settings_solver_nodes_zero_allowed``, ``settings_token_length_unchecked``; the CLI tests of
the same refusals would, on the mutants, start a server that never returns)."""

from __future__ import annotations

import pytest

from robustce.errors import ConfigError
from robustce.serve.settings import ServeSettings, read_token


@pytest.mark.parametrize("nodes", [0, -1])
def test_a_node_limit_below_one_is_refused(nodes):
    with pytest.raises(ConfigError, match="solver_nodes"):
        ServeSettings(solver_nodes=nodes)
    assert ServeSettings(solver_nodes=1).solver_nodes == 1


@pytest.mark.parametrize("token, ok", [("a" * 15, False), ("abc", False), ("a" * 16, True),
                                       ("a" * 8 + " " + "b" * 8, False)])
def test_a_token_of_fewer_than_16_characters_is_refused(tmp_path, token, ok):
    path = tmp_path / "token"
    path.write_text(token + "\n")
    if ok:
        assert read_token(path) == token
    else:
        with pytest.raises(ConfigError, match="at least 16 characters"):
            read_token(path)
