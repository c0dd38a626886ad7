"""A toy kind in one folder: kind.py (the Kind, named by $PE_HARNESS_KINDS, which the judge
imports too) and impls.py (two implementations, a plugin the judge never imports)."""
