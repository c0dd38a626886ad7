"""Utilities with no opinion on positional encodings: files, units, processes,
exit codes, argument checks."""
