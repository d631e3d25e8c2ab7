"""The toolkit's edge to the outside: files, processes and the terminal.

The domain (:mod:`model`) computes and never touches a file, a process or
the terminal; what does lives here: reading inputs with located errors and
writing outputs atomically (:mod:`runio.safe_io`), the exit codes of a
command (:mod:`runio.exits`), the measured-run file kinds and their batch
prediction, on-disk caches, and progress lines. Dependencies point one way:
this package imports :mod:`model`, never the reverse.
"""


def install() -> None:
    """Connect the domain to this edge: workload files are read
    (:mod:`runio.workload_files`) and workload results kept on disk
    (:mod:`runio.workload_cache`). Every command runs it
    (:func:`runio.exits.run_command`), as do the ``kvperf`` API and worker
    processes; calling it again does no harm."""
    from . import workload_cache, workload_files
    workload_files.install()
    workload_cache.install()
