"""papermill, imported without the grammar jsonschema would build for a format no notebook uses.

jsonschema checks the `iri` format with `rfc3987_syntax` when that package is importable (jupyter-events asks
for it), and importing it builds a parser from its grammar: about 2 of the 2.8 seconds papermill takes to import
on a 2-core laptop, paid by every `python -m helpers.runs`. Neither nbformat's notebook schema nor papermill
checks that format, so the package is marked absent before papermill is first imported; a process that had
already imported it keeps it.
"""

from __future__ import annotations

import sys
from types import ModuleType

UNUSED_FORMAT_CHECKER = "rfc3987_syntax"


def load_papermill() -> ModuleType:
    """The papermill module, imported on first use."""
    if "papermill" not in sys.modules:
        sys.modules.setdefault(UNUSED_FORMAT_CHECKER, None)  # None in sys.modules: an ImportError on import
    import papermill

    return papermill
