"""statemeta: a formally checked reference model of TDengine's stream-task meta (streamMeta.c)."""

__version__ = "0.1.0"
