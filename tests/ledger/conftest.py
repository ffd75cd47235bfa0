"""Fixtures of the ledger tests: small loan data, a model (v1) and a retrained one (v2),
explanations of v1's declined applicants by a nearest-CE method (on v1's boundary: v2
breaks many) and by nearest neighbour (training rows: v2 keeps most), and ledger URLs on
SQLite and on a real PostgreSQL server (``tests/pg.py``)."""

from __future__ import annotations

import uuid

import pytest
from tests.pg import postgres_url  # noqa: F401 - the shared PostgreSQL fixture

import robustce as rc

pytest.importorskip("sqlalchemy")


@pytest.fixture(scope="package")
def loan():
    data = rc.datasets.load("synthetic_loan", n_samples=600, random_state=0)
    return data.split(test_size=0.3, random_state=0)


@pytest.fixture(scope="package")
def v1(loan):
    return rc.models.MLP(hidden_layers=(8,), epochs=100, random_state=0).fit(loan[0])


@pytest.fixture(scope="package")
def v2(loan):
    return rc.models.MLP(hidden_layers=(8,), epochs=100, random_state=5).fit(loan[0])


@pytest.fixture(scope="package")
def declined(loan, v1):
    test = loan[1].frame
    return test[v1.predict(test) == 0].head(16)


@pytest.fixture(scope="package")
def explanations(loan, v1, declined):
    """Two methods' CEs of v1's declined applicants: MILP nearest (on the boundary) and
    nearest neighbour (training rows)."""
    near = rc.methods.MILPNearest(v1, loan[0]).explain(declined)
    nn = rc.methods.NearestNeighbour(v1, loan[0]).explain(declined)
    return near, nn


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """A new, empty ledger: an SQLite file, or a fresh database on the PostgreSQL server."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite3")
    import psycopg

    base = request.getfixturevalue("postgres_url")
    name = f"ledger_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return base.rsplit("/", 1)[0] + f"/{name}"
