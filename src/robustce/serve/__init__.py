"""``robustce serve``: a recourse service — HTTP API (FastAPI), worker pool, audit log, page."""
