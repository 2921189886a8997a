"""TDengine's own stream-meta code under the harness: the upstream files of a TDengine tree,
compiled unmodified against the project's stub headers and C shim (``shim/``), driven by a
child process and served over protocol 2 (docs/tdengine.md)."""
