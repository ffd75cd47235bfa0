"""``Ledger``: the recourse issued to applicants, kept append-only in one SQL database.

A *promise* is one option given to an applicant: who (the applicant's id, or a salted
SHA-256 of it when ids must not be kept), the applicant's raw row, the model version that
decided (its content hash, :func:`~robustce.notices.record.model_hash`), the method, the
target class, the option's raw target row and changed features, its certificate
(:func:`~robustce.ledger.certificates.certificate_of`), when it was issued and when it
expires. A promise is never rewritten; what happens to it later is a status event
(``honoured``, ``broken``, ``reissued``, ``withdrawn``, ``fulfilled``), and its status is
its latest event (``issued`` before any).

*Outstanding* promises (as of a time): issued by then, not expired, and without a terminal
event (``reissued``, ``withdrawn``, ``fulfilled``) by then. A broken promise stays outstanding
until the lender acts on it.

SQLite by default (a path, or ``sqlite:///...``; WAL journal, ``synchronous=FULL``, mode
0600: several processes append to one file), any SQLAlchemy URL for a server
(``postgresql://...`` through psycopg 3). A file that is not a database, a database holding
other tables, or a ledger of a newer schema version is one :class:`LedgerError` line naming
the URL.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any

import pandas as pd

from robustce.errors import ConfigError
from robustce.ledger.promises import (
    as_micros,
    dumps,
    from_micros,
    now_micros,
    promise_rows_of_explanations,
    promise_rows_of_notice,
)
from robustce.ledger.tables import Tables, prepare
from robustce.sql_store import open_engine, store_url

__all__ = ["EVENT_STATUSES", "TERMINAL", "Ledger", "LedgerError"]

#: the status events a promise may get
EVENT_STATUSES = ("honoured", "broken", "reissued", "withdrawn", "fulfilled")
#: events after which a promise is no longer outstanding
TERMINAL = ("reissued", "withdrawn", "fulfilled")
_TEXT = ("applicant_row", "target_row", "changed", "certificate")


class LedgerError(ConfigError):
    """A ledger that cannot be opened or read (one line naming its URL).

    Examples
    --------
    >>> import tempfile, os
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "notes.txt")
    ...     with open(path, "w") as fh:
    ...         _ = fh.write("not a database" * 100)
    ...     try:
    ...         rc.ledger.Ledger(path)
    ...     except LedgerError as err:
    ...         print(str(err).replace(tmp, "TMP"))
    ledger sqlite:///TMP/notes.txt: DatabaseError: (sqlite3.DatabaseError) file is not a database
    """


class Ledger:
    """The promises in the database at ``url`` (a path for an SQLite file, or an SQLAlchemy
    URL); the tables are created when missing.

    Parameters
    ----------
    url : a path or URL (``postgresql://user@host/db`` uses psycopg 3).
    salt : the salt of hashed applicant ids (default: ``$ROBUSTCE_LEDGER_SALT``, else the
        random salt the ledger stored when it was created; a salt kept outside the database
        is stronger).

    Examples
    --------
    >>> import tempfile, os
    >>> data = rc.datasets.load("synthetic_loan", n_samples=300, random_state=0)
    >>> model = rc.models.MLP(hidden_layers=(8,), epochs=20, random_state=0).fit(data)
    >>> declined = data.frame[model.predict(data.frame) == 0].head(3)
    >>> expl = rc.methods.MILPNearest(model, data).explain(declined)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     ledger = rc.ledger.Ledger(os.path.join(tmp, "ledger.sqlite3"))
    ...     ids = ledger.record_explanations(model, expl)
    ...     part = next(ledger.promises())
    ...     ledger.close()
    >>> len(ids), part["method"].tolist()
    (3, ['milp_nearest', 'milp_nearest', 'milp_nearest'])
    """

    def __init__(self, url: str, *, salt: str | bytes | None = None):
        def _prepare(sa: Any, engine: Any, shown: str) -> tuple[Tables, str]:
            return prepare(sa, engine, shown, LedgerError)

        self._sa, self.url, self.engine, (self.tables, stored) = open_engine(
            store_url(str(url)), what="ledger", flag="--ledger", extra="ledger",
            prepare=_prepare, error=LedgerError)
        salt = salt if salt is not None else os.environ.get("ROBUSTCE_LEDGER_SALT") or stored
        self._salt = salt.encode() if isinstance(salt, str) else bytes(salt)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({self.url!r})"

    # --- keys ----------------------------------------------------------------------------
    def applicant_key(self, applicant_id: Any) -> str:
        """The salted SHA-256 an applicant id is kept as when ids must not be kept."""
        digest = hashlib.sha256(self._salt + b"\x00" + str(applicant_id).encode()).hexdigest()
        return f"sha256:{digest}"

    # --- writes --------------------------------------------------------------------------
    def record(self, *, applicant_id: Any, applicant_row: Mapping[str, Any],
               target_row: Mapping[str, Any], model: Any, method: str, target_class: int,
               certificate: Mapping[str, Any] | None = None,
               issued_at: datetime | str | None = None,
               expires_at: datetime | str | None = None, keep_ids: bool = True) -> int:
        """Record one option given to one applicant; its promise id.

        ``model`` is the deciding model (a robustce model) or its hash; ``certificate`` a
        :func:`~robustce.ledger.certificates.certificate_of` dict (default: kind
        ``"none"``); times are UTC (a naive datetime is read as UTC; default: now)."""
        from robustce.ledger.promises import promise_row

        row = promise_row(applicant_id=applicant_id, applicant_row=applicant_row,
                          target_row=target_row, model=model, method=method,
                          target_class=target_class, certificate=certificate,
                          issued_at=issued_at, expires_at=expires_at)
        return self.record_rows([row], keep_ids=keep_ids)[0]

    def record_rows(self, rows: Iterable[Mapping[str, Any]], *, keep_ids: bool = True,
                    origin: str = "python") -> list[int]:
        """Record prepared promise rows (:func:`~robustce.ledger.promises.promise_row`) in
        one transaction; their ids, in order."""
        values = []
        for row in rows:
            r = dict(row)
            if "applicant_key" in r:  # already kept as it is (a reissued promise)
                key, hashed = str(r.pop("applicant_key")), bool(r.pop("applicant_hashed"))
                r.pop("applicant_id", None)
            else:
                applicant, hashed = r.pop("applicant_id"), not keep_ids
                key = self.applicant_key(applicant) if hashed else str(applicant)
            r.setdefault("origin", origin)
            r.setdefault("reissue_of", None)
            values.append({**r, "applicant_key": key, "applicant_hashed": hashed,
                           **{k: dumps(r[k]) for k in _TEXT}})
        if not values:
            return []
        t = self.tables.promises
        with self.engine.begin() as conn:
            got = conn.execute(t.insert().returning(t.c.id, sort_by_parameter_order=True),
                               values).scalars().all()
        return [int(i) for i in got]

    def record_explanations(self, model: Any, explanations: Any,
                            applicant_ids: Sequence[Any] | Mapping[Any, Any] | None = None,
                            certificates: str | Mapping[str, Any] = "auto",
                            expires_at: datetime | str | None = None,
                            keep_ids: bool = True, issued_at: datetime | str | None = None
                            ) -> list[int]:
        """Record every valid CE of ``explanations`` (each the model's forward pass puts in
        its target class) as a promise; their ids.

        ``applicant_ids``: one per query (a sequence in query order, or a mapping from
        query id), default the query ids; ``certificates``: ``"auto"`` reads each method's
        certificate columns, or one dict for all; ``keep_ids=False`` keeps salted hashes."""
        rows = promise_rows_of_explanations(model, explanations, applicant_ids, certificates,
                                            issued_at, expires_at)
        return self.record_rows(rows, keep_ids=keep_ids, origin="explain")

    def record_notice(self, model: Any, notice: Any, applicant_row: Mapping[str, Any], *,
                      expires_at: datetime | str | None = None, keep_ids: bool = True
                      ) -> list[int]:
        """Record the options of one adverse-action notice (a
        :class:`~robustce.notices.Notice` or its JSON document) with their certificates;
        ``applicant_row`` is the applicant's full raw row (notices leave protected features
        out)."""
        rows = promise_rows_of_notice(model, notice, applicant_row, expires_at)
        return self.record_rows(rows, keep_ids=keep_ids, origin="notice")

    def add_status(self, promise_id: int, status: str, *, model_hash: str | None = None,
                   repair_id: int | None = None, note: str | None = None,
                   at: datetime | str | None = None) -> None:
        """Append a status event to a promise (never an update of the promise)."""
        if status not in EVENT_STATUSES:
            raise LedgerError(f"unknown status {status!r}; expected one of {EVENT_STATUSES}")
        self.add_statuses([{"promise_id": int(promise_id), "status": status,
                            "model_hash": model_hash, "repair_id": repair_id, "note": note,
                            "at": now_micros() if at is None else as_micros(at)}])

    def add_statuses(self, events: list[dict[str, Any]]) -> None:
        """Append several status events in one transaction (dicts of ``add_status``'s
        fields, ``at`` in microseconds)."""
        if events:
            with self.engine.begin() as conn:
                conn.execute(self.tables.events.insert(), events)

    # --- reads ---------------------------------------------------------------------------
    def count(self) -> int:
        """The number of promises recorded."""
        sa = self._sa
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(
                self.tables.promises)).scalar_one())

    def last_id(self) -> int:
        """The highest promise id (0 for an empty ledger)."""
        sa, p = self._sa, self.tables.promises
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.max(p.c.id))).scalar() or 0)

    def promise(self, promise_id: int) -> dict[str, Any]:
        """One promise as recorded (JSON fields parsed, times as UTC datetimes)."""
        t = self.tables.promises
        with self.engine.connect() as conn:
            row = conn.execute(self._sa.select(t).where(t.c.id == int(promise_id))).first()
        if row is None:
            raise LedgerError(f"ledger {self.url}: no promise {promise_id}")
        out = row._asdict()
        for k in _TEXT:
            out[k] = json.loads(out[k])
        out["issued_at"] = from_micros(out["issued_at"])
        out["expires_at"] = None if out["expires_at"] is None else from_micros(out["expires_at"])
        return out

    def events(self, promise_id: int) -> list[dict[str, Any]]:
        """A promise's status events, oldest first."""
        e = self.tables.events
        with self.engine.connect() as conn:
            rows = conn.execute(self._sa.select(e).where(e.c.promise_id == int(promise_id))
                                .order_by(e.c.at, e.c.seq)).all()
        return [{**r._asdict(), "at": from_micros(r.at)} for r in rows]

    def status(self, promise_id: int) -> str:
        """The latest event's status (``issued`` before any)."""
        events = self.events(promise_id)
        return events[-1]["status"] if events else "issued"

    def _outstanding(self, as_of: int) -> Any:
        sa, p, e = self._sa, self.tables.promises, self.tables.events
        ended = sa.exists().where(e.c.promise_id == p.c.id, e.c.status.in_(TERMINAL),
                                  e.c.at <= as_of)
        return sa.and_(p.c.issued_at <= as_of,
                       sa.or_(p.c.expires_at.is_(None), p.c.expires_at > as_of), ~ended)

    def promises(self, outstanding: bool = True, as_of: datetime | str | None = None,
                 partition_size: int = 10_000, parse: bool = True,
                 until_id: int | None = None) -> Iterator[pd.DataFrame]:
        """The promises in partitions of at most ``partition_size`` rows (bounded memory),
        by id: every one, or (``outstanding=True``) those outstanding ``as_of`` (default:
        now); with ``until_id``, those with ids up to it. ``parse=False`` leaves the JSON
        columns as text and the times in microseconds (what
        :func:`~robustce.ledger.check.check` reads)."""
        if int(partition_size) < 1:
            raise LedgerError(f"partition_size must be >= 1, got {partition_size}")
        sa, p = self._sa, self.tables.promises
        when = now_micros() if as_of is None else as_micros(as_of)
        last = 0
        while True:
            query = sa.select(p).where(p.c.id > last)
            if until_id is not None:
                query = query.where(p.c.id <= int(until_id))
            if outstanding:
                query = query.where(self._outstanding(when))
            with self.engine.connect() as conn:
                rows = conn.execute(query.order_by(p.c.id).limit(int(partition_size))).all()
            if not rows:
                return
            frame = pd.DataFrame([r._asdict() for r in rows])
            last = int(frame["id"].iloc[-1])
            yield _parsed(frame) if parse else frame
            if len(rows) < int(partition_size):
                return

    def deciding_version(self, applicant_id: Any, now: datetime | str | None = None
                         ) -> str | None:
        """Which model version decides this applicant under the grandfather policy: the
        issuing model hash of their latest outstanding, unexpired promise, else None (the
        current model decides)."""
        sa, p = self._sa, self.tables.promises
        when = now_micros() if now is None else as_micros(now)
        keys = [str(applicant_id), self.applicant_key(applicant_id)]
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(p.c.model_hash)
                               .where(p.c.applicant_key.in_(keys), self._outstanding(when))
                               .order_by(p.c.issued_at.desc(), p.c.id.desc()).limit(1)).first()
        return None if row is None else str(row.model_hash)

    def applicant_promises(self, applicant_id: Any, *, limit: int = 100,
                           as_of: datetime | str | None = None) -> pd.DataFrame:
        """The applicant's promises (kept by id or by salted hash), the newest first, at
        most ``limit``: the unparsed columns of ``promises(parse=False)`` plus ``status``
        (the latest event's, ``issued`` before any) and ``outstanding`` (as of ``as_of``,
        default now)."""
        if int(limit) < 1:
            raise LedgerError(f"limit must be >= 1, got {limit}")
        sa, p, e = self._sa, self.tables.promises, self.tables.events
        when = now_micros() if as_of is None else as_micros(as_of)
        keys = [str(applicant_id), self.applicant_key(applicant_id)]
        latest = (sa.select(e.c.status).where(e.c.promise_id == p.c.id)
                  .order_by(e.c.at.desc(), e.c.seq.desc()).limit(1).scalar_subquery())
        query = (sa.select(p, latest.label("status"),
                           sa.case((self._outstanding(when), True), else_=False)
                           .label("outstanding"))
                 .where(p.c.applicant_key.in_(keys))
                 .order_by(p.c.issued_at.desc(), p.c.id.desc()).limit(int(limit)))
        with self.engine.connect() as conn:
            result = conn.execute(query)
            frame = pd.DataFrame(result.all(), columns=list(result.keys()))
        frame["status"] = frame["status"].fillna("issued")
        frame["outstanding"] = frame["outstanding"].astype(bool)
        return frame


def _parsed(frame: pd.DataFrame) -> pd.DataFrame:
    for k in _TEXT:
        frame[k] = [json.loads(v) for v in frame[k]]
    frame["issued_at"] = pd.to_datetime(frame["issued_at"], unit="us", utc=True)
    frame["expires_at"] = pd.to_datetime(frame["expires_at"], unit="us", utc=True)
    return frame

