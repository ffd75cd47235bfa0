"""The HTML report keeps wide tables inside the page: every table sits in a horizontally
scrolling wrapper (issue 37: the MACE table ran off the right edge)."""

import re

import pandas as pd

from robustce.evaluation.report import render_html


def test_every_table_is_in_a_scroll_wrapper() -> None:
    wide = pd.DataFrame({f"metric_{i}": [0.123456, 0.5] for i in range(20)},
                        index=pd.Index(["a", "b"], name="method"))
    page = render_html("t", wide, extra_tables={"per dataset": wide})
    tables = re.findall(r"<table", page)
    wrapped = re.findall(r'<div class="table-wrap"><table', page)
    assert len(tables) == 2 and len(wrapped) == 2
    css = page[page.index("<style>"):page.index("</style>")]
    assert re.search(r"\.table-wrap\{[^}]*overflow-x:auto", css)
