"""Functions run by worker processes in the tests (importable by spawned children)."""


def sum_of_rows(ptd, rows):
    return ptd[rows]["obs"].sum().item()
