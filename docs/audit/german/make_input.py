"""Write the German credit applicants (all 1000) with a derived ``sex`` column for the audit
demo. The dataset codes sex together with marital status in ``personal_status_sex``; in this
file (ROAR's ``german.csv``, Statlog data) the codes 1, 2, 3, 5 occur 50, 310, 92 and 548
times, which matches the Statlog attribute 9 counts A91 (male, divorced/separated) 50,
A92 (female) 310, A94 (male, married/widowed) 92 and A93 (male, single) 548 — so code 2 is
female and the others male.

    ROBUSTCE_DATA=/work/shared/datasets python docs/audit/german/make_input.py /tmp/german.csv
"""

import sys

import numpy as np

import robustce as rc

data = rc.datasets.load("german")
frame = data.frame.copy()
frame["sex"] = np.where(frame["personal_status_sex"] == 2, "female", "male")
frame.to_csv(sys.argv[1], index=False)
print(f"{len(frame)} applicants -> {sys.argv[1]}")
