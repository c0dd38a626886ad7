"""A toy kind in one folder: kind.py (the Kind, named by $PE_HARNESS_KINDS, which the judge
imports too), impls.py (two implementations, a plugin the judge never imports) and precision.py
(its precision study, which its Kind names for the precision verb)."""
