"""``python -m statemeta.serve``: the public command that serves the reference behind the
harness protocol. It only runs ``statemeta.harness.serve.main``, where the server lives (with
the harness it belongs to); its names are re-exported here so ``from statemeta.serve import
Server`` keeps working."""

from __future__ import annotations

import sys

from statemeta.harness.serve import (
    ERROR_CODES,
    PROTOCOL_DOC,
    WORKERS,
    ConcurrentServer,
    ProtocolError,
    Server,
    main,
    refresh_protocol_doc,
)

__all__ = [
    "ERROR_CODES",
    "PROTOCOL_DOC",
    "WORKERS",
    "ConcurrentServer",
    "ProtocolError",
    "Server",
    "main",
    "refresh_protocol_doc",
]

if __name__ == "__main__":
    sys.exit(main())
