"""`python -m harness bench`: timing sweeps over length x width x dtype x threads x device.

pytest-benchmark does the timing; this package adds what it lacks. In the
parent, `cli`/`options` validate the command line, `grid` and `roofs` plan the
cells, `sweep` runs them group by group and `supervisor` starts one pytest
worker process per (backend, threads) group, killing it on a hang and
restarting it after a crash. In each worker, `worker` (a pytest plugin) pins
the threads (`threads`) before the backend starts, skips cells over budget
(`budget`), and `suite` + `measure` time each cell (peak memory by `peak`),
appending one JSON line per cell to the run's journal (`journal`). `results`
turns the journal into the tidy `bench.csv`, `env` records the machine,
`progress` prints a line per cell, `post` runs verify and the report after.
"""
