"""The ledger's tables (SQLAlchemy Core), its schema version, and the check that a database
is a ledger this version can read.

Three tables, all append-only:

* ``robustce_ledger_meta`` — ``key``/``value`` pairs: the schema version, the ledger's salt;
* ``robustce_ledger_promises`` — one row per option given to an applicant (see
  :class:`~robustce.ledger.store.Ledger`); never updated;
* ``robustce_ledger_events`` — status events of a promise (``honoured``, ``broken``,
  ``reissued``, ``withdrawn``, ``fulfilled``): its status is its latest event.

Times are integers: microseconds since the Unix epoch, UTC (exact on every database).
"""

from __future__ import annotations

import os
import time
from typing import Any

__all__ = ["SCHEMA_VERSION", "PREFIX", "Tables", "prepare"]

#: the version of the tables this code writes (a ledger of a newer version is refused)
SCHEMA_VERSION = 1
#: every table of robustce starts with this (a database holding only these may be shared)
PREFIX = "robustce_"


class Tables:
    """The ledger's tables on one ``sqlalchemy`` module ``sa``."""

    def __init__(self, sa: Any):
        big = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # SQLite: a rowid alias
        self.meta = sa.MetaData()
        self.kv = sa.Table(
            "robustce_ledger_meta", self.meta,
            sa.Column("key", sa.String(64), primary_key=True),
            sa.Column("value", sa.Text, nullable=False),
        )
        self.promises = sa.Table(
            "robustce_ledger_promises", self.meta,
            sa.Column("id", big, primary_key=True, autoincrement=True),
            sa.Column("applicant_key", sa.String(128), nullable=False, index=True),
            sa.Column("applicant_hashed", sa.Boolean, nullable=False),
            sa.Column("applicant_row", sa.Text, nullable=False),
            sa.Column("model_hash", sa.String(128), nullable=False, index=True),
            sa.Column("method", sa.String(64), nullable=False),
            sa.Column("target_class", sa.Integer, nullable=False),
            sa.Column("target_label", sa.Text),
            sa.Column("target_row", sa.Text, nullable=False),
            sa.Column("changed", sa.Text, nullable=False),
            sa.Column("certificate_kind", sa.String(16), nullable=False),
            sa.Column("certificate", sa.Text, nullable=False),
            sa.Column("issued_at", sa.BigInteger, nullable=False),
            sa.Column("expires_at", sa.BigInteger),
            sa.Column("origin", sa.String(32), nullable=False),
            sa.Column("reissue_of", big, sa.ForeignKey("robustce_ledger_promises.id")),
        )
        self.events = sa.Table(
            "robustce_ledger_events", self.meta,
            sa.Column("seq", big, primary_key=True, autoincrement=True),
            sa.Column("promise_id", big, sa.ForeignKey("robustce_ledger_promises.id"),
                      nullable=False, index=True),
            sa.Column("at", sa.BigInteger, nullable=False),
            sa.Column("status", sa.String(16), nullable=False),
            sa.Column("model_hash", sa.String(128)),
            sa.Column("repair_id", big, sa.ForeignKey("robustce_ledger_promises.id")),
            sa.Column("note", sa.Text),
        )


def prepare(sa: Any, engine: Any, shown: str, error: type[Exception]) -> tuple[Tables, str]:
    """(the tables, the ledger's stored salt) of the database behind ``engine``: created
    where the database is empty (or holds only other robustce tables); ``error`` (one line
    naming ``shown``) where it holds other tables and no ledger, or a ledger of a newer
    schema version."""
    tables = Tables(sa)
    names = set(sa.inspect(engine).get_table_names())
    if tables.kv.name not in names:
        foreign = sorted(n for n in names if not n.startswith(PREFIX))
        if foreign:
            more = f" and {len(foreign) - 3} more" if len(foreign) > 3 else ""
            raise error(f"ledger {shown}: the database holds other tables "
                        f"({', '.join(foreign[:3])}{more}) and no robustce ledger; give a new "
                        "file or an empty database")
    for attempt in range(3):  # several processes opening a new ledger at once race to create it
        try:
            tables.meta.create_all(engine, checkfirst=True)
            _init_meta(sa, engine, tables)
            break
        except (sa.exc.IntegrityError, sa.exc.ProgrammingError, sa.exc.OperationalError):
            if attempt == 2:
                raise
            time.sleep(0.2)
    with engine.connect() as conn:
        kv = dict(conn.execute(sa.select(tables.kv.c.key, tables.kv.c.value)).all())
    try:
        version = int(kv.get("schema_version", ""))
    except ValueError:
        raise error(f"ledger {shown}: its schema version {kv.get('schema_version')!r} is not "
                    "a number; not a robustce ledger") from None
    if version > SCHEMA_VERSION:
        raise error(f"ledger {shown}: schema version {version} is newer than this robustce "
                    f"reads ({SCHEMA_VERSION}); upgrade robustce")
    return tables, kv["salt"]


def _init_meta(sa: Any, engine: Any, tables: Tables) -> None:
    """The schema version and a random salt, written once (the first process wins)."""
    with engine.begin() as conn:
        have = set(conn.execute(sa.select(tables.kv.c.key)).scalars())
        rows = [{"key": k, "value": v} for k, v in (("schema_version", str(SCHEMA_VERSION)),
                                                   ("salt", os.urandom(16).hex()))
                if k not in have]
        if rows:
            conn.execute(tables.kv.insert(), rows)
