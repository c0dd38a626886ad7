"""A run directory's files and the rules for reading its rows: the journal (cells.jsonl),
bench.csv and the flags. Shared by bench, which writes them, and report, which reads them."""
